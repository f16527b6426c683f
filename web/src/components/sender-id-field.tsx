import { TextField } from './field'

/** The sender ID of an SMS or a broadcast: one field, with the server's rule as its hint. */
export function SenderIdField({ value, onChange, error }: { value: string; onChange(value: string): void; error: unknown }) {
  return (
    <TextField
      label="Sender ID"
      name="senderId"
      required
      maxLength={16}
      placeholder="Acme"
      hint="1–11 letters and digits, or a phone number in E.164."
      value={value}
      onChange={(e) => onChange(e.target.value)}
      error={error}
    />
  )
}
