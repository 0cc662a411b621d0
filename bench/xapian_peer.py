"""Xapian as a peer of the benchmark, where Debian's python3-xapian is installed (run by bench/peers.ts).

  python3 bench/xapian_peer.py index <corpus.jsonl> <dir>      builds a Xapian database of ids, titles and texts
  python3 bench/xapian_peer.py query <dir> <queries.json> <k> <reps>
                                                               answers each query (its words OR-ed, BM25, English
                                                               stemming) once to warm, then <reps> times timed

Each command prints one JSON object: what it did and its peak resident size in KiB.
"""
import json
import resource
import sys
import time

import xapian


def peak_kib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def index(corpus, path):
    db = xapian.WritableDatabase(path, xapian.DB_CREATE_OR_OVERWRITE)
    generator = xapian.TermGenerator()
    generator.set_stemmer(xapian.Stem("english"))
    docs = 0
    db.begin_transaction()
    with open(corpus, encoding="utf-8") as lines:
        for line in lines:
            if not line.strip():
                continue
            record = json.loads(line)
            doc = xapian.Document()
            generator.set_document(doc)
            generator.index_text_without_positions(record["title"])
            generator.index_text_without_positions(record["text"])
            doc.set_data(record["id"])
            doc.add_boolean_term("Q" + record["id"])
            db.add_document(doc)
            docs += 1
    db.commit_transaction()
    db.close()
    print(json.dumps({"docs": docs, "peak_kib": peak_kib()}))


def query(path, queries_file, k, reps):
    db = xapian.Database(path)
    enquire = xapian.Enquire(db)
    enquire.set_weighting_scheme(xapian.BM25Weight())
    parser = xapian.QueryParser()
    parser.set_stemmer(xapian.Stem("english"))
    parser.set_stemming_strategy(xapian.QueryParser.STEM_SOME)
    parser.set_default_op(xapian.Query.OP_OR)
    with open(queries_file, encoding="utf-8") as f:
        texts = json.load(f)
    times = []
    for text in texts:
        if text == "":
            times.append([])
            continue
        parsed = parser.parse_query(text)
        enquire.set_query(parsed)
        enquire.get_mset(0, k)
        runs = []
        for _ in range(reps):
            start = time.perf_counter()
            enquire.set_query(parser.parse_query(text))
            enquire.get_mset(0, k)
            runs.append((time.perf_counter() - start) * 1000)
        times.append(runs)
    print(json.dumps({"times": times, "peak_kib": peak_kib()}))


if __name__ == "__main__":
    command = sys.argv[1] if len(sys.argv) > 1 else ""
    if command == "index":
        index(sys.argv[2], sys.argv[3])
    elif command == "query":
        query(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
