// What the SMSC sends the SMPP carrier unasked: enquire_link, unbind, and deliver_sm (receipts, and inbound messages reassembled from their parts).
import type { Logger } from 'pino'
import smpp from 'smpp'
import type { Clock } from '../../../platform/clock.js'
import type { CarrierHandlers } from './carrier.js'
import {
  DATA_CODING_GSM7,
  decodeShortMessage,
  ESM_CLASS_RECEIPT,
  ESM_CLASS_UDHI,
  parseReceipt,
  RAW_MESSAGE_PAYLOAD,
  splitUdh,
  STATUS,
  toPlatformAddress,
} from './smpp-codec.js'

const REASSEMBLY_TIMEOUT_MS = 5 * 60_000

interface PartialInbound {
  total: number
  texts: Map<number, string>
  isHandingOver: boolean
  timer: NodeJS.Timeout
}

/**
 * Answers the requests that come in on the carrier's link. A receipt handed over is
 * reported to `receiptIn`; at a stop, the carrier waits for `deliveriesInHand` and drops
 * what was not reassembled (dropPartials).
 */
export class SmppInbound {
  /** Set by the carrier's start. */
  handlers: CarrierHandlers | undefined
  private readonly partials = new Map<string, PartialInbound>()
  /** deliver_sm being handed over; each is answered when done. */
  readonly deliveriesInHand = new Set<Promise<void>>()

  constructor(
    private readonly logger: Logger,
    private readonly clock: Clock,
    private readonly receiptIn: (carrierMessageId: string) => void,
  ) {}

  dropPartials(): void {
    for (const partial of this.partials.values()) clearTimeout(partial.timer)
    this.partials.clear()
  }

  onRequest(link: { session: smpp.Session }, pdu: smpp.Pdu): void {
    if (pdu.isResponse()) return
    switch (pdu.command) {
      case 'enquire_link':
        link.session.send(pdu.response())
        return
      case 'deliver_sm': {
        const inHand = this.onDeliverSm(link, pdu).finally(() => this.deliveriesInHand.delete(inHand))
        this.deliveriesInHand.add(inHand)
        return
      }
      case 'unbind':
        this.logger.warn('SMPP unbind from the SMSC')
        link.session.send(pdu.response(), () => link.session.close())
        return
      case 'unknown':
        link.session.send(pdu.response())
        return
    }
    // alert_notification has no response; anything else the SMSC may send we do not serve.
    if (`${pdu.command}_resp` in smpp.commands) link.session.send(pdu.response({ command_status: STATUS.invalidCommand }))
  }

  /**
   * The deliver_sm_resp goes out only once the receipt or message is handed over: a
   * temporary error makes the SMSC offer it again, so a failed hand-over loses nothing.
   */
  private async onDeliverSm(link: { session: smpp.Session }, pdu: smpp.Pdu): Promise<void> {
    let status: number
    try {
      status = await this.handleDeliverSm(pdu)
    } catch (err) {
      this.logger.warn({ err }, 'SMPP deliver_sm not handed over; the SMSC will offer it again')
      status = STATUS.temporaryAppError
    }
    link.session.send(pdu.response(status === STATUS.ok ? {} : { command_status: status }))
  }

  private async handleDeliverSm(pdu: smpp.Pdu): Promise<number> {
    const handlers = this.handlers!
    const esmClass = pdu.esm_class ?? 0
    let octets = Buffer.isBuffer(pdu.short_message) ? pdu.short_message : Buffer.alloc(0)
    const payload = pdu[RAW_MESSAGE_PAYLOAD]
    if (octets.length === 0 && Buffer.isBuffer(payload)) octets = payload

    if ((esmClass & ESM_CLASS_RECEIPT) !== 0 || pdu.receipted_message_id !== undefined) {
      const text = octets.toString('latin1')
      const receipt = parseReceipt(text, pdu.receipted_message_id, pdu.message_state)
      if (receipt === undefined) {
        // Logged without its "text:" field, which quotes the recipient's message.
        this.logger.warn({ receipt: text.split(/\btext:/i)[0] }, 'SMPP receipt without a message id or state; ignored')
      } else if (receipt.status !== undefined) {
        await handlers.onReceipt({ ...receipt, status: receipt.status, receivedAt: this.clock.now() })
        this.receiptIn(receipt.carrierMessageId)
      }
      return STATUS.ok
    }

    const from = toPlatformAddress(pdu.source_addr, pdu.source_addr_ton)
    const to = toPlatformAddress(pdu.destination_addr, pdu.dest_addr_ton)
    const { body, concat } = (esmClass & ESM_CLASS_UDHI) !== 0 ? splitUdh(octets) : { body: octets, concat: undefined }
    const text = decodeShortMessage(pdu.data_coding ?? DATA_CODING_GSM7, body)
    if (!concat) {
      await handlers.onInbound({ from, to, content: text, receivedAt: this.clock.now() })
      return STATUS.ok
    }

    const key = `${from}\n${to}\n${concat.reference}\n${concat.total}`
    let partial = this.partials.get(key)
    if (!partial) {
      const timer = setTimeout(() => {
        this.partials.delete(key)
        this.logger.warn({ from, to, received: partial?.texts.size, total: concat.total }, 'SMPP multipart message incomplete; dropped')
      }, REASSEMBLY_TIMEOUT_MS)
      timer.unref()
      partial = { total: concat.total, texts: new Map(), isHandingOver: false, timer }
      this.partials.set(key, partial)
    }
    partial.texts.set(concat.sequence, text)
    if (partial.texts.size < partial.total || partial.isHandingOver) return STATUS.ok

    const content = [...partial.texts.entries()].sort(([a], [b]) => a - b).map(([, part]) => part).join('')
    partial.isHandingOver = true
    try {
      await handlers.onInbound({ from, to, content, receivedAt: this.clock.now() })
    } catch (err) {
      // The parts stay: the SMSC offers this last one again and completes the message anew.
      partial.isHandingOver = false
      throw err
    }
    clearTimeout(partial.timer)
    this.partials.delete(key)
    return STATUS.ok
  }
}
