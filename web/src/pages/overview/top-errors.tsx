import type { ErrorStats } from '../../api'
import { DataTable } from '../../components/data-table'
import { formatCount, formatTime } from '../../format'

type ErrorCount = ErrorStats['items'][number]

/** The carrier errors of the range, most frequent first, as the API ranks them. */
export function TopErrors({ errors, span }: { errors: ErrorStats; span: string }) {
  return (
    <DataTable<ErrorCount>
      caption={`Top errors, ${span.toLowerCase()}`}
      columns={[
        { header: 'Error', className: 'wrap', cell: (row) => row.error },
        { header: 'Count', className: 'counter', cell: (row) => formatCount(row.count) },
        { header: 'Example recipient', className: 'mono', cell: (row) => row.exampleRecipient },
        { header: 'Last seen', cell: (row) => formatTime(row.lastAt) },
      ]}
      rows={errors.items}
      rowKey={(row) => row.error}
      empty={`No failed messages in the ${span.toLowerCase()}.`}
    />
  )
}
