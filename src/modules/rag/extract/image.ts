import { imageSize } from 'image-size'
import { type Deadline, LIMITS } from './limits'
import { recognize, type OcrResult } from './ocr'
import { ExtractionError } from './types'

const FORMATS = new Set(['png', 'jpg', 'tiff', 'webp', 'bmp', 'gif'])

/** Width and height from the image's header, before any pixel is decoded; over LIMITS.pixels is refused. */
export function checkImage(bytes: Uint8Array): { width: number; height: number } {
  let size
  try {
    size = imageSize(bytes)
  } catch {
    throw new ExtractionError('not a readable image (unknown or damaged format)')
  }
  if (!size.type || !FORMATS.has(size.type)) throw new ExtractionError(`not a readable image (${size.type ?? 'unknown'} images are not read)`)
  const { width, height } = size
  if (!width || !height) throw new ExtractionError('not a readable image (no size in its header)')
  if (width * height > LIMITS.pixels) {
    throw new ExtractionError(`image too large: ${width}×${height} is ${Math.round((width * height) / 1e6)} megapixels, over the limit of ${LIMITS.pixels / 1e6}`)
  }
  return { width, height }
}

/** An image's text by OCR. */
export async function extractImage(bytes: Uint8Array, deadline?: Deadline): Promise<OcrResult> {
  checkImage(bytes)
  const result = await recognize(bytes, deadline)
  if (!result.text) throw new ExtractionError('no text: OCR found no words in the image')
  return result
}
