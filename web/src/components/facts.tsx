import type { ReactNode } from 'react'

interface FactsProps {
  /** Label and value pairs, in the order shown. */
  facts: [string, ReactNode][]
  /** `stats` for big figures, `facts` for a table of details. */
  className: 'stats' | 'facts'
}

/** Labelled values as a description list: each dd is read with its dt. */
export function Facts({ facts, className }: FactsProps) {
  return (
    <dl className={className}>
      {facts.map(([label, value]) => (
        <div key={label}>
          <dt>{label}</dt>
          <dd>{value}</dd>
        </div>
      ))}
    </dl>
  )
}
