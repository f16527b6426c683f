import { RANGE_DAYS, type RangeDays } from '../stats-range'

/** Buttons for the last 7, 30 or 90 days; the one in force is pressed. */
export function RangeSwitch({ days, onChange, label }: { days: RangeDays; onChange(days: RangeDays): void; label: string }) {
  return (
    <div className="range-switch" role="group" aria-label={label}>
      {RANGE_DAYS.map((choice) => (
        <button key={choice} type="button" aria-pressed={choice === days} onClick={() => onChange(choice)}>
          {choice} days
        </button>
      ))}
    </div>
  )
}
