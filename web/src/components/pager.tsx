import type { Page } from '../api'

/** Previous / next for a list envelope; hidden when everything fits on one page. */
export function Pager({ page, onPage, label }: { page: Page<unknown>; onPage(pageNumber: number): void; label: string }) {
  if (page.totalPages <= 1 && page.pageNumber <= 1) return null
  return (
    <nav className="pager" aria-label={label}>
      <button type="button" disabled={!page.hasPreviousPage} onClick={() => onPage(page.pageNumber - 1)}>
        Previous
      </button>
      <span>
        Page {page.pageNumber} of {Math.max(page.totalPages, 1)} ({page.totalCount} in all)
      </span>
      <button type="button" disabled={!page.hasNextPage} onClick={() => onPage(page.pageNumber + 1)}>
        Next
      </button>
    </nav>
  )
}
