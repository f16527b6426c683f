import { useState } from 'react'
import type { ContactList } from '../api'
import { AddContactsForm } from './contacts/add-contacts-form'
import { ContactBrowser } from './contacts/contact-browser'
import { ExportContacts } from './contacts/export-contacts'
import { ImportForm } from './contacts/import-form'
import { ListMembers } from './contacts/list-members'
import { ListsSection } from './contacts/lists-section'

export function ContactsPage() {
  // Bumped after every change, so each table on the page loads again.
  const [version, setVersion] = useState(0)
  const changed = () => setVersion((n) => n + 1)
  const [managing, setManaging] = useState<ContactList | null>(null)

  return (
    <div className="stack-lg">
      <p className="lead">Contacts are the phone numbers you send to; lists group them for broadcasts.</p>
      <AddContactsForm version={version} onAdded={changed} />
      <ImportForm version={version} onImported={changed} />
      <ContactBrowser version={version} />
      <ExportContacts />
      <ListsSection
        version={version}
        managingId={managing?.id ?? null}
        onChanged={changed}
        onManage={setManaging}
        onDeleted={(id) => {
          if (managing?.id === id) setManaging(null)
          changed()
        }}
      />
      {managing ? <ListMembers key={managing.id} list={managing} version={version} onChanged={changed} onClose={() => setManaging(null)} /> : null}
    </div>
  )
}
