/**
 * The part of the `smpp` package (0.5.x, untyped CommonJS) that the adapter and the test
 * SMSC use. A PDU carries its fields as own properties named as in SMPP 3.4.
 */
declare module 'smpp' {
  import type { EventEmitter } from 'node:events'
  import type { Server as NetServer, Socket } from 'node:net'

  namespace smpp {
    /** The library decodes short_message into this unless it is left raw (see smpp-codec.ts). */
    interface DecodedMessage {
      udh?: Buffer[]
      message: string | Buffer
    }

    interface PduFields {
      command_status?: number
      sequence_number?: number
      system_id?: string
      password?: string
      source_addr_ton?: number
      source_addr_npi?: number
      source_addr?: string
      dest_addr_ton?: number
      dest_addr_npi?: number
      destination_addr?: string
      esm_class?: number
      registered_delivery?: number
      data_coding?: number
      short_message?: Buffer | DecodedMessage
      message_id?: string
      receipted_message_id?: string
      message_state?: number
      [field: string]: unknown
    }

    interface Pdu extends PduFields {
      command: string
      command_id: number
      command_status: number
      sequence_number: number
      isResponse(): boolean
      response(fields?: PduFields): Pdu
      toBuffer(): Buffer
    }

    type ResponseCallback = (pdu: Pdu) => void

    interface Session extends EventEmitter {
      readonly socket: Socket
      /** False when the socket is no longer writable; the callback is then never called. */
      send(pdu: Pdu, onResponse?: ResponseCallback, onSent?: ResponseCallback): boolean
      bind_transceiver(fields: PduFields, onResponse?: ResponseCallback): boolean
      submit_sm(fields: PduFields, onResponse?: ResponseCallback): boolean
      deliver_sm(fields: PduFields, onResponse?: ResponseCallback): boolean
      enquire_link(fields: PduFields, onResponse?: ResponseCallback): boolean
      unbind(fields: PduFields, onResponse?: ResponseCallback): boolean
      pause(): void
      resume(): void
      close(callback?: () => void): void
      destroy(callback?: () => void): void
    }

    interface Server extends NetServer {
      readonly sessions: Session[]
    }

    interface ParamDefinition {
      type: unknown
      filter?: unknown
    }

    interface CommandDefinition {
      id: number
      params?: Record<string, ParamDefinition>
      /** Renames a TLV on PDUs of this command; a name with no TLV definition is left unfiltered. */
      tlvMap?: Record<string, string>
    }

    interface TextEncoding {
      encode(text: string): Buffer
      decode(bytes: Buffer): string
    }
  }

  const smpp: {
    connect(options: { host: string; port: number }): smpp.Session
    createServer(onSession: (session: smpp.Session) => void): smpp.Server
    PDU: new (command: string, fields?: smpp.PduFields) => smpp.Pdu
    /** Command status names (ESME_ROK, ESME_RTHROTTLED...) to values. */
    errors: Record<string, number>
    commands: Record<string, smpp.CommandDefinition>
    encodings: { ASCII: smpp.TextEncoding; LATIN1: smpp.TextEncoding; UCS2: smpp.TextEncoding }
  }
  export = smpp
}
