/** Byte arrays: the small operations several rooms share (readers, body packs, installers). */

/** The pieces joined into one array (the piece itself when there is one). */
export const concatBytes = (pieces: ReadonlyArray<Uint8Array>): Uint8Array => {
  if (pieces.length === 1) return pieces[0]!
  let length = 0
  for (const piece of pieces) length += piece.length
  const out = new Uint8Array(length)
  let at = 0
  for (const piece of pieces) {
    out.set(piece, at)
    at += piece.length
  }
  return out
}
