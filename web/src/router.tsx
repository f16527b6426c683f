import { useSyncExternalStore, type AnchorHTMLAttributes, type MouseEvent } from 'react'

// A router of a few lines: the dashboard has a handful of flat pages, no nested routes.
const NAVIGATED = 'dashboard:navigated'

function subscribe(onChange: () => void): () => void {
  window.addEventListener('popstate', onChange)
  window.addEventListener(NAVIGATED, onChange)
  return () => {
    window.removeEventListener('popstate', onChange)
    window.removeEventListener(NAVIGATED, onChange)
  }
}

/** The current path, without a trailing slash (except for /). */
export function usePath(): string {
  return useSyncExternalStore(subscribe, () => normalize(window.location.pathname))
}

export function normalize(path: string): string {
  return path.length > 1 ? path.replace(/\/+$/, '') : path
}

export function navigate(path: string, options: { replace?: boolean } = {}): void {
  if (normalize(window.location.pathname) === normalize(path)) return
  if (options.replace) window.history.replaceState(null, '', path)
  else window.history.pushState(null, '', path)
  window.dispatchEvent(new Event(NAVIGATED))
}

type LinkProps = AnchorHTMLAttributes<HTMLAnchorElement> & { to: string }

/** An ordinary link (open in a new tab still works) that navigates without a reload. */
export function Link({ to, onClick, ...rest }: LinkProps) {
  const follow = (event: MouseEvent<HTMLAnchorElement>) => {
    onClick?.(event)
    if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return
    event.preventDefault()
    navigate(to)
  }
  return <a href={to} onClick={follow} {...rest} />
}
