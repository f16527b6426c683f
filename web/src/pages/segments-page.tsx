import { useRef, useState } from 'react'
import { SuccessNotice } from '../components/success-notice'
import { emptyDraft, type Draft } from './segments/draft'
import { SegmentEditor } from './segments/segment-editor'
import { SegmentList } from './segments/segment-list'

export function SegmentsPage() {
  const [version, setVersion] = useState(0)
  const [draft, setDraft] = useState<Draft>(emptyDraft)
  const [notice, setNotice] = useState<string | null>(null)
  const editor = useRef<HTMLFormElement>(null)

  return (
    <div className="stack-lg">
      <p className="lead">A segment picks contacts by rules on their properties; a broadcast to it reaches whoever matches when it is sent.</p>
      <SuccessNotice text={notice} />
      <SegmentEditor
        key={draft.id ?? 'new'}
        formRef={editor}
        initial={draft}
        onSaved={(name, isNew) => {
          setNotice(`Segment "${name}" ${isNew ? 'created' : 'saved'}.`)
          setDraft(emptyDraft())
          setVersion((n) => n + 1)
        }}
        onCancel={() => setDraft(emptyDraft())}
      />
      <SegmentList
        version={version}
        editingId={draft.id}
        onEdit={(segment) => {
          setNotice(null)
          setDraft(segment)
          editor.current?.scrollIntoView({ block: 'start' })
        }}
        onDeleted={(segment) => {
          setNotice(`Segment "${segment.name}" deleted.`)
          if (draft.id === segment.id) setDraft(emptyDraft())
          setVersion((n) => n + 1)
        }}
      />
    </div>
  )
}
