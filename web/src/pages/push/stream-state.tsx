export type StreamState =
  | { kind: 'idle' }
  | { kind: 'connecting' }
  | { kind: 'open'; channels: string[]; recovered: boolean }
  | { kind: 'reconnecting' }
  | { kind: 'closed' }

export function StateLabel({ state }: { state: StreamState }) {
  switch (state.kind) {
    case 'idle':
      return <>Not connected.</>
    case 'connecting':
      return <>Connecting…</>
    case 'open':
      return (
        <>
          <span className="badge badge-ok">Live</span> Connected to {state.channels.join(', ')}.{state.recovered ? '' : ' Some earlier events were no longer kept.'}
        </>
      )
    case 'reconnecting':
      return (
        <>
          <span className="badge badge-mixed">Reconnecting</span> The connection dropped; reconnecting by itself…
        </>
      )
    case 'closed':
      return (
        <>
          <span className="badge badge-bad">Closed</span> The stream ended (the token may have expired). Connect again for a new token.
        </>
      )
  }
}
