// GSM 03.38: the basic table costs one septet a character, the extension table two
// (escape + character). Anything else makes the whole message UCS-2.
const GSM_BASIC = new Set(
  '@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !"#¤%&\'()*+,-./0123456789:;<=>?¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà',
)
const GSM_EXTENSION = new Set('\f^{}\\[~]|€')

export interface SmsLength {
  encoding: 'GSM-7' | 'UCS-2'
  /** Septets (GSM-7) or UTF-16 code units (UCS-2). */
  units: number
  segments: number
}

/** An estimate for the form; the API's answer (segments, encoding, creditsUsed) is what counts. */
export function measureSms(content: string): SmsLength {
  let septets = 0
  for (const char of content) {
    if (GSM_BASIC.has(char)) septets += 1
    else if (GSM_EXTENSION.has(char)) septets += 2
    else return ucs2(content)
  }
  return { encoding: 'GSM-7', units: septets, segments: septets === 0 ? 0 : septets <= 160 ? 1 : Math.ceil(septets / 153) }
}

function ucs2(content: string): SmsLength {
  const units = content.length
  return { encoding: 'UCS-2', units, segments: units <= 70 ? 1 : Math.ceil(units / 67) }
}

/** The comma-separated recipients field as the API's array; blanks between commas dropped. */
export function splitRecipients(text: string): string[] {
  return text
    .split(/[,\n;]/)
    .map((part) => part.trim())
    .filter((part) => part !== '')
}
