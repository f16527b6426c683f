import type { ReactNode } from 'react'
import type { Page } from '../api'
import { Pager } from './pager'

export interface Column<Row> {
  /** The header, and each cell's data-label: the narrow layout shows it beside the value. */
  header: string
  /** For a column of buttons: the header is read by screen readers but not shown. */
  hideHeader?: boolean
  className?: string
  /** A tooltip for cells that clip their text. */
  title?(row: Row): string | undefined
  cell(row: Row): ReactNode
}

export interface TablePager {
  page: Page<unknown>
  onPage(pageNumber: number): void
  /** The pager's navigation name, e.g. "Contact pages". */
  label: string
}

interface DataTableProps<Row> {
  /** Names the table for screen readers; shown to no one else. */
  caption: string
  columns: Column<Row>[]
  rows: Row[]
  rowKey(row: Row): string | number
  /** Shown instead of the table when there are no rows; without it, the table shows empty. */
  empty?: ReactNode
  pager?: TablePager
  /** A note that belongs to the table, inside its scrolling frame. */
  footnote?: ReactNode
}

/** A table that stacks into labelled cards on narrow screens (table.responsive in styles.css). */
export function DataTable<Row>({ caption, columns, rows, rowKey, empty, pager, footnote }: DataTableProps<Row>) {
  if (rows.length === 0 && empty !== undefined) return <p className="empty">{empty}</p>
  return (
    <>
      <div className="table-wrap">
        <table className="responsive">
          <caption className="visually-hidden">{caption}</caption>
          <thead>
            <tr>
              {columns.map((column) => (
                <th key={column.header} scope="col">
                  {column.hideHeader ? <span className="visually-hidden">{column.header}</span> : column.header}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {rows.map((row) => (
              <tr key={rowKey(row)}>
                {columns.map((column) => (
                  <td key={column.header} data-label={column.header} className={column.className} title={column.title?.(row)}>
                    {column.cell(row)}
                  </td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
        {footnote}
      </div>
      {pager ? <Pager {...pager} /> : null}
    </>
  )
}

/** The column of row buttons that ends most tables. */
export function actionsColumn<Row>(cell: (row: Row) => ReactNode): Column<Row> {
  return { header: 'Actions', hideHeader: true, cell }
}
