#!/usr/bin/env bash
# Tries FuncPipe's packages the way a user gets them, outside the workspace: packs the tarballs, installs the library
# ones into a copy of this example (which then type-checks and runs) and the CLI's into a temporary global prefix
# (which then indexes a folder and answers a query). Nothing is installed outside a temporary folder.
# Run it as `npm run pack:check` (CI does).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
# The Node 24 the workspace installs, whatever Node the system has (`npm run` puts it first too).
export PATH="$root/node_modules/.bin:$PATH"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
npm_flags=(--prefer-offline --no-audit --no-fund --loglevel=error)
version="$(node -p 'require(process.argv[1]).version' "$root/packages/cli/package.json")"

echo "== packing (each package builds itself first: tsc into dist/, the CLI bundle)"
(cd "$root" && npm pack -w packages/domain -w packages/pipeline -w packages/cli --pack-destination "$work" --silent)
ls -l "$work"/*.tgz

echo "== the example project, installed from the tarballs"
mkdir "$work/app"
cp -r "$root/examples/library/src" "$root/examples/library/package.json" "$root/examples/library/tsconfig.json" "$work/app/"
cp "$work/funcpipe-domain-$version.tgz" "$work/funcpipe-pipeline-$version.tgz" "$work/app/"
(
  cd "$work/app"
  npm install "${npm_flags[@]}"
  npm run --silent check
  npm start --silent | tee "$work/app.out"
  # Offline: the example's own model, whatever chat model this shell names.
  env -u FUNCPIPE_LLM npm run --silent ask | tee "$work/ask.out"
  # Only the entry points are exported: a file behind them is not reachable from an installed package.
  if node --input-type=module -e 'await import("@funcpipe/pipeline/store/IndexStore")' 2>"$work/deep.err"; then
    echo "an internal module of @funcpipe/pipeline is reachable from outside" >&2
    exit 1
  fi
  grep -q ERR_PACKAGE_PATH_NOT_EXPORTED "$work/deep.err" || { cat "$work/deep.err" >&2; exit 1; }
)
grep -q '^1\. .* moon "The Moon"' "$work/app.out" || { echo "the example's best answer is not the Moon note" >&2; exit 1; }
grep -q '^The Moon is about 384,000 km from the Earth\. \[1\]$' "$work/ask.out" || { echo "the ask example did not quote the Moon note" >&2; exit 1; }
grep -q '^\[1\] moon "The Moon"' "$work/ask.out" || { echo "the ask example's first source is not the Moon note" >&2; exit 1; }

echo "== the funcpipe command, installed globally into a temporary prefix"
npm install -g --prefix "$work/global" "${npm_flags[@]}" "$work/funcpipe-cli-$version.tgz"
funcpipe="$work/global/bin/funcpipe"
[ "$("$funcpipe" --version)" = "funcpipe v$version" ] || { echo "funcpipe --version is not v$version" >&2; exit 1; }
mkdir -p "$work/elsewhere/notes"
printf '# Tides\nThe Moon pulls the oceans into two bulges, so most coasts see two high tides a day.\n' > "$work/elsewhere/notes/tides.md"
printf '# Bread\nLet the dough rise slowly in a cool kitchen.\n' > "$work/elsewhere/notes/bread.md"
(
  cd "$work/elsewhere"
  "$funcpipe" --version
  "$funcpipe" index notes
  "$funcpipe" query "why are there two high tides" --top-k 1 | tee "$work/cli.out"
)
grep -q '^1\. .* tides.md "Tides"' "$work/cli.out" || { echo "funcpipe query did not answer from tides.md" >&2; exit 1; }
echo "== the packed packages install and work"
