import { unwrap, type RequestBody, type RulesOperator } from '../../api'
import { ContactTable } from '../../components/contact-table'
import { ProblemAlert } from '../../components/problem-alert'
import { plural } from '../../format'
import { useApi } from '../../session'
import { useLoad } from '../../use-load'
import { useSettled } from '../../use-settled'

const PREVIEW_SETTLE_MS = 400
const SAMPLE_SIZE = 5

/** The audience of the rules as they stand: counted again once editing pauses. */
export function LivePreview({ rulesOperator, rules }: { rulesOperator: RulesOperator; rules: string }) {
  const api = useApi()
  const key = useSettled(JSON.stringify({ rulesOperator, rules }), PREVIEW_SETTLE_MS)
  const isSettling = key !== JSON.stringify({ rulesOperator, rules })
  const preview = useLoad(
    (signal) =>
      unwrap(
        api.POST('/v1/audience/segments/preview', {
          params: { query: { limit: SAMPLE_SIZE } },
          body: JSON.parse(key) as RequestBody<'previewSegmentRules'>,
          signal,
        }),
      ),
    key,
  )
  const isCounting = isSettling || preview.isLoading
  return (
    <section className="preview stack" aria-labelledby="preview-heading">
      <h3 id="preview-heading">Who matches now</h3>
      <ProblemAlert error={preview.error} context="Could not count the matching contacts" />
      <p role="status" aria-live="polite">
        {preview.data && !preview.error ? (
          <>
            <strong data-testid="segment-count">{plural(preview.data.count, 'contact')}</strong> would receive a broadcast
            {preview.data.optedOut ? ` (${plural(preview.data.optedOut, 'more contact')} match but opted out)` : ''}.
          </>
        ) : null}
        {isCounting ? <span className="muted"> Counting…</span> : null}
      </p>
      {preview.data && !preview.error && preview.data.sample.length > 0 ? (
        <ContactTable contacts={preview.data.sample} caption="Sample of matching contacts" />
      ) : null}
    </section>
  )
}
