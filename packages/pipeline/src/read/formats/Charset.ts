/**
 * The text of an HTML or XML file from its bytes, in the encoding it declares, as a browser finds it: a byte order
 * mark, else a `<meta charset>` (or `http-equiv` content type) or an XML declaration in the first 1,024 bytes, else
 * UTF-8 when the bytes are valid UTF-8, else windows-1252 (what unlabelled Western pages mostly are). So a page saved
 * in Latin-1 shows `café`, not mojibake.
 */

const DECLARED = /<meta[^>]+charset\s*=\s*["']?\s*([\w.:-]+)|<\?xml[^>]+encoding\s*=\s*["']([\w.:-]+)/i

const decoderFor = (label: string, fatal: boolean): InstanceType<typeof TextDecoder> | undefined => {
  try {
    return new TextDecoder(label, { fatal })
  } catch {
    return undefined
  }
}

export const decodeMarkup = (bytes: Uint8Array): string => {
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) return new TextDecoder("utf-8").decode(bytes)
  if (bytes[0] === 0xff && bytes[1] === 0xfe) return new TextDecoder("utf-16le").decode(bytes)
  if (bytes[0] === 0xfe && bytes[1] === 0xff) return new TextDecoder("utf-16be").decode(bytes)
  const head = new TextDecoder("latin1").decode(bytes.subarray(0, 1024))
  const match = DECLARED.exec(head)
  const declared = match === null ? undefined : decoderFor(match[1] ?? match[2]!, false)
  // A page that says UTF-8 but is not is decoded as windows-1252, as one that says nothing; one that says UTF-16
  // without a byte order mark is read as UTF-8, as browsers do (its declaration could not be read otherwise).
  if (declared !== undefined && declared.encoding !== "utf-8" && !declared.encoding.startsWith("utf-16")) {
    return declared.decode(bytes)
  }
  const strict = decoderFor("utf-8", true)!
  try {
    return strict.decode(bytes)
  } catch {
    return new TextDecoder("windows-1252").decode(bytes)
  }
}
