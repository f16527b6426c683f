import { unwrap, type Broadcast } from '../../api'
import { useApi } from '../../session'
import { useLoad } from '../../use-load'

/** The lists and segments a broadcast may go to, and the name of the one it goes to. */
export function useAudiences() {
  const api = useApi()
  const lists = useLoad((signal) => unwrap(api.GET('/v1/contact-lists', { params: { query: { pageSize: 100 } }, signal })), 'broadcast-lists')
  const segments = useLoad((signal) => unwrap(api.GET('/v1/audience/segments', { params: { query: { pageSize: 100 } }, signal })), 'broadcast-segments')

  const audienceName = (broadcast: Broadcast): string => {
    if (broadcast.contactListId) return `List ${lists.data?.items.find((l) => l.id === broadcast.contactListId)?.name ?? '(deleted)'}`
    if (broadcast.segmentId) return `Segment ${segments.data?.items.find((s) => s.id === broadcast.segmentId)?.name ?? '(deleted)'}`
    return '—'
  }
  return { lists: lists.data?.items ?? [], segments: segments.data?.items ?? [], audienceName }
}
