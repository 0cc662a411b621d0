/**
 * Word and EPUB files made for tests, in their real container format (a ZIP of XML parts, as Word and e-book tools
 * write them), small enough to make in every run instead of keeping binaries in the repository.
 */
import { strToU8, zipSync } from "fflate"

const xmlText = (text: string) =>
  text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;")

/** A paragraph of a Word document: body text, or a heading of level 1–2 (Word's "Heading 1" and "Heading 2" styles). */
export type WordBlock =
  | { readonly heading: 1 | 2; readonly text: string }
  | { readonly text: string }
  | { readonly table: ReadonlyArray<ReadonlyArray<string>> }
  | { readonly raw: string }

const paragraph = (block: WordBlock): string => {
  if ("raw" in block) return block.raw
  if ("table" in block) {
    const rows = block.table
      .map(
        (row) =>
          `<w:tr>${row.map((cell) => `<w:tc><w:p><w:r><w:t>${xmlText(cell)}</w:t></w:r></w:p></w:tc>`).join("")}</w:tr>`
      )
      .join("")
    return `<w:tbl>${rows}</w:tbl>`
  }
  const style = "heading" in block ? `<w:pPr><w:pStyle w:val="Heading${block.heading}"/></w:pPr>` : ""
  return `<w:p>${style}<w:r><w:t xml:space="preserve">${xmlText(block.text)}</w:t></w:r></w:p>`
}

const W = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'

/** A `.docx` file of `blocks`, with `title` in its core properties when given. */
export const docxOf = (blocks: ReadonlyArray<WordBlock>, title?: string): Uint8Array =>
  zipSync({
    "[Content_Types].xml": strToU8(
      '<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">' +
        '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>' +
        '<Default Extension="xml" ContentType="application/xml"/>' +
        '<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/>' +
        "</Types>"
    ),
    "_rels/.rels": strToU8(
      '<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">' +
        '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/>' +
        "</Relationships>"
    ),
    "word/_rels/document.xml.rels": strToU8(
      '<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">' +
        '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/styles" Target="styles.xml"/>' +
        "</Relationships>"
    ),
    "word/styles.xml": strToU8(
      `<?xml version="1.0" encoding="UTF-8"?><w:styles ${W}>` +
        '<w:style w:type="paragraph" w:styleId="Heading1"><w:name w:val="heading 1"/></w:style>' +
        '<w:style w:type="paragraph" w:styleId="Heading2"><w:name w:val="heading 2"/></w:style>' +
        "</w:styles>"
    ),
    "word/document.xml": strToU8(
      `<?xml version="1.0" encoding="UTF-8"?><w:document ${W}><w:body>${blocks.map(paragraph).join("")}</w:body></w:document>`
    ),
    ...(title === undefined
      ? {}
      : {
          "docProps/core.xml": strToU8(
            '<?xml version="1.0" encoding="UTF-8"?><cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties" xmlns:dc="http://purl.org/dc/elements/1.1/">' +
              `<dc:title>${xmlText(title)}</dc:title></cp:coreProperties>`
          )
        })
  })

/**
 * An EPUB book of `chapters` (each an XHTML body), titled `title`. `encrypted` adds an encryption manifest naming the
 * first chapter (DRM), `obfuscatedFont` one naming a font obfuscated as the IDPF allows (not DRM).
 */
export const epubOf = (
  title: string,
  chapters: ReadonlyArray<string>,
  options: {
    readonly encrypted?: boolean
    readonly obfuscatedFont?: boolean
    readonly href?: (i: number) => string
  } = {}
): Uint8Array =>
  zipSync({
    mimetype: [strToU8("application/epub+zip"), { level: 0 }],
    "META-INF/container.xml": strToU8(
      '<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">' +
        '<rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/></rootfiles></container>'
    ),
    ...(options.encrypted === true || options.obfuscatedFont === true
      ? {
          "META-INF/encryption.xml": strToU8(
            '<encryption xmlns="urn:oasis:names:tc:opendocument:xmlns:container" xmlns:enc="http://www.w3.org/2001/04/xmlenc#">' +
              (options.obfuscatedFont === true
                ? '<enc:EncryptedData><enc:EncryptionMethod Algorithm="http://www.idpf.org/2008/embedding"/>' +
                  '<enc:CipherData><enc:CipherReference URI="OEBPS/fonts/serif.otf"/></enc:CipherData></enc:EncryptedData>'
                : "") +
              (options.encrypted === true
                ? '<enc:EncryptedData><enc:EncryptionMethod Algorithm="http://www.w3.org/2001/04/xmlenc#aes128-cbc"/>' +
                  '<enc:CipherData><enc:CipherReference URI="OEBPS/text/ch0.xhtml"/></enc:CipherData></enc:EncryptedData>'
                : "") +
              "</encryption>"
          )
        }
      : {}),
    "OEBPS/content.opf": strToU8(
      '<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0"><metadata xmlns:dc="http://purl.org/dc/elements/1.1/">' +
        `<dc:title>${xmlText(title)}</dc:title></metadata><manifest>` +
        chapters
          .map((_, i) => `<item id="c${i}" href="text/ch${i}.xhtml" media-type="application/xhtml+xml"/>`)
          .join("") +
        // The spine reads the chapters last to first: reading order is the spine's, not the manifest's.
        `</manifest><spine>${chapters.map((_, i) => `<itemref idref="c${chapters.length - 1 - i}"/>`).join("")}</spine></package>`
    ),
    ...Object.fromEntries(
      chapters.map((body, i) => [
        `OEBPS/text/ch${i}.xhtml`,
        strToU8(
          `<?xml version="1.0" encoding="UTF-8"?><html xmlns="http://www.w3.org/1999/xhtml"><body>${body}</body></html>`
        )
      ])
    )
  })
