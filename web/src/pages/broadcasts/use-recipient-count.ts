import { unwrap } from '../../api'
import { useApi } from '../../session'
import { useLoad } from '../../use-load'

export type TargetKind = 'list' | 'segment'

/** Recipients now: the segment's preview, or for a list the same count through a one-rule preview (opted-out members left out). */
export function useRecipientCount(kind: TargetKind, targetId: string) {
  const api = useApi()
  return useLoad(async (signal) => {
    if (!targetId) return null
    if (kind === 'segment') return unwrap(api.GET('/v1/audience/segments/{id}/preview', { params: { path: { id: targetId }, query: { limit: 0 } }, signal }))
    const rules = JSON.stringify([{ field: 'contactListId', operator: 'equals', value: targetId }])
    return unwrap(api.POST('/v1/audience/segments/preview', { params: { query: { limit: 0 } }, body: { rulesOperator: 'AND', rules }, signal }))
  }, `${kind}:${targetId}`)
}
