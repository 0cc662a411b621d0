/**
 * XML read in one streaming pass (`htmlparser2` in XML mode), with nesting bounded: the parser's own stack makes each
 * element cost in proportion to the depth, so a file of thousands of nested elements would cost time in the square
 * of its size. Deeper nesting than `MAX_DEPTH` ends the parse with `TooDeep`.
 */

import { Parser } from "htmlparser2"

/** How deep a document's markup may nest: far more than any document needs. */
export const MAX_DEPTH = 1024

/** The markup nested deeper than `MAX_DEPTH`. */
export class TooDeep extends Error {}

/** What a parse calls for each element's start, text and end. */
export interface XmlHandlers {
  readonly open?: (name: string, attributes: Record<string, string>) => void
  readonly text?: (data: string) => void
  readonly close?: (name: string) => void
}

/** Parses `xml` with `handlers`; throws `TooDeep` for nesting deeper than `MAX_DEPTH`. */
export const parseXml = (xml: string, handlers: XmlHandlers): void => {
  let depth = 0
  const parser = new Parser(
    {
      onopentag(name, attributes) {
        if (++depth > MAX_DEPTH) throw new TooDeep()
        handlers.open?.(name, attributes)
      },
      ontext(data) {
        handlers.text?.(data)
      },
      onclosetag(name) {
        depth--
        handlers.close?.(name)
      }
    },
    { xmlMode: true, decodeEntities: true }
  )
  parser.write(xml)
  parser.end()
}
