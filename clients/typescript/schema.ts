/**
 * The paths, operations and schemas of the messaging platform's API, generated from
 * GET /v1/openapi.json by openapi-typescript. Do not edit: run `npm run generate:client`.
 */

export interface paths {
    "/healthz": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The process is up
         * @description Liveness: answers 200 `{"status":"ok"}` while the process serves requests, without touching the store. Takes no credentials and is not rate limited.
         */
        get: operations["getHealth"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/readyz": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The store is reachable
         * @description Readiness: answers 200 `{"status":"ready"}` when the store answers a ping, and 503 when it does not. Takes no credentials and is not rate limited.
         */
        get: operations["getReadiness"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/auth/signup": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Create an account and its first user
         * @description Creates an account (named `accountName`, else the email) with SIGNUP_CREDITS credits and a user who logs in with `email` and `password` (at least 10 characters). The email is matched without regard to case or surrounding spaces. Takes no credentials; limited to three times LOGIN_ATTEMPTS_PER_MINUTE requests a minute per client address.
         */
        post: operations["signUp"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/auth/login": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Log in and get a session JWT
         * @description Checks the email and password and answers a dashboard session JWT, valid for 12 hours, to send as `Authorization: Bearer <token>`. Takes no credentials; limited to LOGIN_ATTEMPTS_PER_MINUTE attempts a minute per email and three times that per client address.
         */
        post: operations["logIn"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/account": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Get the calling account
         * @description The account of the API key or session: its name, credit balance, low-balance threshold and inbound numbers. Any API key (Sms ones too) or a session.
         */
        get: operations["getAccount"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        /**
         * Change the account settings
         * @description Changes the account name, the low-balance threshold (LowBalance fires when a debit takes the balance below it) or the inbound numbers, each only when given. `inboundNumbers` replaces the list: each a valid phone number in international format (+ or 00 and the country code; spaces and punctuation allowed, stored as E.164), given twice counts once. Takes a dashboard session only.
         */
        patch: operations["updateAccount"];
        trace?: never;
    };
    "/v1/admin/accounts/{accountId}/credits": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Add credits to an account
         * @description Adds `amount` credits to any account and answers its new balance. 422 when the balance would pass 2^53 - 1. Takes the operator token (ADMIN_TOKEN); the route exists only when the server has one.
         */
        post: operations["addCredits"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/keys": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List API keys
         * @description The active (unrevoked) API keys of the account, newest first, each shown by its first 12 characters only. Takes a dashboard session only.
         */
        get: operations["listKeys"];
        put?: never;
        /**
         * Create an API key
         * @description Creates an API key with a permission (Full by default; Sms; or Playground, whose sends go to the sandbox and cost nothing) and answers the raw key as a bare JSON string: it is shown only this once, and only its SHA-256 is kept. The body is optional. An account holds at most 200 active keys. Takes a dashboard session only.
         */
        post: operations["createKey"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/keys/{keyId}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        /**
         * Revoke an API key
         * @description Revokes the key at once and for good: the next request with it is a 401. Takes a dashboard session only.
         */
        delete: operations["revokeKey"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/contacts/import": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Import contacts from a CSV file
         * @description Takes a CSV upload (`content-type: text/csv`, or application/csv) with a header row, streamed to a temporary file, and answers 202 with the import's id and a Location header; the rows are imported in the background. Poll GET /v1/contacts/imports/{id} for progress and the first 1,000 row errors. Known numbers are reused untouched, so importing a file again is safe. The upload may hold at most IMPORT_MAX_BYTES (512 MiB by default).
         */
        post: operations["importContacts"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/contacts/imports/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Get a CSV import
         * @description The status of an import (processing, completed or failed), the rows processed so far (whole windows: always a prefix of the file), the contacts created and found existing, the invalid rows and the first 1,000 row errors.
         */
        get: operations["getContactImport"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/contacts": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List contacts
         * @description Contacts of the account, newest first, optionally only those matching `search` (any case) or the members of a list.
         */
        get: operations["listContacts"];
        put?: never;
        /**
         * Create contacts from phone numbers
         * @description Creates a contact for each valid number of a comma-separated string (at most 10,000 numbers; use the CSV import for more), optionally adding each to a list. Numbers already known are reused untouched (`existing`); repeats count once (`duplicates`); invalid ones are reported in `invalid` and skipped, unless none is valid (422). A number is valid in international format, with + or 00 and the country code (spaces and punctuation allowed), and when it belongs to an assigned range; it is stored as E.164.
         */
        post: operations["createContacts"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/contacts/single": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Create one contact
         * @description Creates a contact with names, email and attributes (201), or answers the existing contact of that number unchanged (200); either way with a Location header. The phone number must be valid in international format (+ or 00 and the country code; spaces and punctuation allowed) and is stored as E.164. With `contactListId` the contact is also added to that list.
         */
        post: operations["createContact"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/contacts/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Get a contact
         * @description One contact of the account, with its attributes and opt-out state.
         */
        get: operations["getContact"];
        put?: never;
        post?: never;
        /**
         * Delete a contact
         * @description Deletes the contact for good, and with it its list memberships; fires ContactDeleted.
         */
        delete: operations["deleteContact"];
        options?: never;
        head?: never;
        /**
         * Change a contact
         * @description Changes names, email or `optedOut`, each only when given (null clears a name or the email). `attributes` are merged into the contact's: a name set to null is removed; the contact may hold at most 50 attributes after the merge (else 422). The phone number cannot change.
         */
        patch: operations["updateContact"];
        trace?: never;
    };
    "/v1/contacts/export": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Export the contacts as CSV
         * @description Every contact of the account as a CSV file, one record each, oldest first. The attribute names are read first, then the contacts; both are streamed as they are read, so a million contacts download without the server holding them, and a client that goes away stops the reading. Columns: id, phoneNumber, firstName, lastName, email, country, optedOut, createdAt, then one per attribute name any contact of the account has, sorted, headed by the name (`attributes.<name>` for a name that is also one of the columns before), empty where the contact has no such attribute. `optedOut` is true or false; times are ISO 8601 UTC. RFC 4180 CSV in UTF-8: a header row, then one record per line, lines ending in CRLF; a cell holding a comma, a double quote or a line break is quoted, its quotes doubled; an empty cell is a null. As spreadsheet exports usually do against formula injection, a text cell that begins with =, +, -, @, a tab or a carriage return gets a single quote (') in front, so that a spreadsheet shows it as text instead of running it; a cell that is only a number (+14155550100, -5) is left as it is.
         */
        get: operations["exportContacts"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/contact-lists": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List contact lists
         * @description The lists of the account, newest first, with their member counts, optionally only those whose name matches `search`.
         */
        get: operations["listContactLists"];
        put?: never;
        /**
         * Create a contact list
         * @description Creates an empty list and answers 201 with its id as a bare JSON string and a Location header. The name must not be blank.
         */
        post: operations["createContactList"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/contact-lists/{id}/contacts": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Add contacts to a list
         * @description Adds contacts by id (`contactIds`, each a contact of the account), or by phone number (`phoneNumbers`, a comma-separated string of at most 10,000 numbers in international format; contacts are created as needed, and any invalid number is a 422). Exactly one of the two. Contacts already members are left as they are; `added` counts the new members.
         */
        post: operations["addContactsToList"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/contact-lists/{id}/contacts/{contactId}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        /**
         * Remove a contact from a list
         * @description Removes the contact from the list; the contact itself stays.
         */
        delete: operations["removeContactFromList"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/contact-lists/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        /**
         * Delete a contact list
         * @description Deletes the list; its contacts stay.
         */
        delete: operations["deleteContactList"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/audience/segments": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List segments
         * @description Segments of the account without their rules, newest first, optionally only those whose name matches `search`. `contactCount` is served from a cache refreshed in the background (stale for at most SEGMENT_COUNT_MAX_STALE_MS, 30 s by default, while changes keep coming).
         */
        get: operations["listSegments"];
        put?: never;
        /**
         * Create a segment
         * @description Saves a name (not blank), a description and rules, and answers 201 with the segment's id as a bare JSON string and a Location header. Rules are checked as a whole: every bad rule is named in the 422 (`rules[2].operator`); at most 100 rules.
         */
        post: operations["createSegment"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/audience/segments/preview": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Preview the audience of unsaved rules
         * @description Counts, live, the contacts the rules match that a broadcast would send to, the opted-out ones apart, and answers a sample of up to `limit` of them. Nothing is saved. Rules are checked as a whole: every bad rule is named in the 422 (`rules[2].operator`); at most 100 rules.
         */
        post: operations["previewSegmentRules"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/audience/segments/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Get a segment
         * @description A segment with its rules and its contact count (counted live on the first read after a change, else from the background cache).
         */
        get: operations["getSegment"];
        /**
         * Replace a segment
         * @description Replaces the name, description, rulesOperator and rules (absent ones take their defaults: no description, AND, "[]"). Rules are checked as a whole: every bad rule is named in the 422 (`rules[2].operator`); at most 100 rules.
         */
        put: operations["replaceSegment"];
        post?: never;
        /**
         * Delete a segment
         * @description Deletes the segment for good.
         */
        delete: operations["deleteSegment"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/audience/segments/{id}/preview": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Preview the audience of a segment
         * @description Counts, live, the contacts a broadcast to the segment would send to now, the opted-out ones apart, and answers a sample of up to `limit` of them.
         */
        get: operations["previewSegment"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sms/send": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Send an SMS
         * @description Queues one message to 1 to 1,000 recipients, now or at `scheduledAt` (at most a year ahead), and answers 201 with a Location header. It is priced in GSM-7 (160 characters, 153 per part) or else UCS-2 (70, 67 per part) segments and charged one credit per segment per recipient: the debit and the queued recipients commit together or not at all. Opted-out recipients are skipped, listed in `skipped` and not charged. A Playground key sends to the sandbox and is charged nothing. With an Idempotency-Key, a repeat within 24 h with the same body answers the first response again and charges nothing. Any API key (Sms ones too) or a session.
         */
        post: operations["sendSms"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sms": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List messages
         * @description Messages of the account (sends, broadcasts, opt-out replies), newest first, with their delivery counts; with `status`, only those with a recipient in that status.
         */
        get: operations["listSms"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sms/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Get a message
         * @description A message with the status of each recipient (queued, sent, delivered or failed, with their times, the carrier's id and any error); the first 1,000 recipients of a broadcast.
         */
        get: operations["getSms"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sms/inbound": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Simulate an inbound SMS
         * @description Delivers an SMS from `from` to the caller's account as if a handset had sent it: InboundMessage fires, and a message that is a STOP or START keyword opts the sender out or back in and queues the one free confirmation reply. `from` must be a valid phone number in international format. Exists only with the simulator carrier (CARRIER=simulator).
         */
        post: operations["simulateInboundSms"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sms/export": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Export the message log as CSV
         * @description The account's message log as a CSV file, one record per recipient of each message created in [`from`, `to`), ordered by the message's creation time, then the message, then the recipient. Streamed as it is read: a million recipients download without the server holding them, and a client that goes away stops the reading. Columns: messageId, broadcastId, phoneNumber, status, carrier, segments, credits, sentAt, deliveredAt, failedAt, error. `segments` are the recipient's own parts (a personalised broadcast's text) or else the message's; `credits` what it was charged when queued, its route's price times its segments (0 in the sandbox and for the free replies to STOP and START; a refund of a recipient that failed before reaching a carrier is not subtracted); times are ISO 8601 UTC. RFC 4180 CSV in UTF-8: a header row, then one record per line, lines ending in CRLF; a cell holding a comma, a double quote or a line break is quoted, its quotes doubled; an empty cell is a null. As spreadsheet exports usually do against formula injection, a text cell that begins with =, +, -, @, a tab or a carriage return gets a single quote (') in front, so that a spreadsheet shows it as text instead of running it; a cell that is only a number (+14155550100, -5) is left as it is. Any API key (Sms ones too) or a session.
         */
        get: operations["exportSms"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/broadcasts/preview": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Preview a message for a contact
         * @description Renders a message with its placeholders for a contact of the account (or for a sample contact, Alex Sample, when none is named): the text it receives, its encoding and its segments. With trackLinks, each URL is shown as a short link of the real length. A bad placeholder is a 422 naming its position.
         */
        post: operations["previewBroadcastMessage"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/broadcasts": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List broadcasts
         * @description Broadcasts of the account, newest first, with their status and progress (recipients, sent, delivered, failed).
         */
        get: operations["listBroadcasts"];
        put?: never;
        /**
         * Create a draft broadcast
         * @description Creates a draft of one message to a contact list or a segment (exactly one of the two), and answers 201 with its id as a bare JSON string and a Location header. Nothing is sent or charged until POST /v1/broadcasts/{id}/send. The name must not be blank; `senderId` is 1 to 11 letters and digits, or an E.164 number.
         */
        post: operations["createBroadcast"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/broadcasts/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Get a broadcast
         * @description A broadcast with its status and progress (recipients, sent, delivered, failed, receipts timed out).
         */
        get: operations["getBroadcast"];
        /**
         * Replace a draft broadcast
         * @description Replaces the name, message, sender id and audience of a draft, with the rules of POST /v1/broadcasts; a broadcast read with GET can be sent back as it is.
         */
        put: operations["replaceBroadcast"];
        post?: never;
        /**
         * Delete a broadcast
         * @description Deletes a broadcast that is not sending or paused: a draft, a scheduled one (which then never starts), a completed or a cancelled one.
         */
        delete: operations["deleteBroadcast"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/broadcasts/{id}/send": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Send a draft broadcast
         * @description Starts a draft now, or schedules it for `scheduledAt` (at most a year ahead). The audience is evaluated when it starts: contacts added since the draft was made are included, opted-out ones are not. The start takes the credits at once, exactly: each recipient's text (personalised) in segments × its route's price, summed (none for a Playground key), and answers 202; the recipients are then queued in the background, at its pace and within its send window. The body is optional.
         */
        post: operations["sendBroadcast"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/broadcasts/{id}/estimate": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Estimate what a broadcast would cost now
         * @description The recipients a send now would reach and the credits it would take, exactly as the send counts them: each recipient's text (personalised, with tracked links at their real length) in segments, times its route's price, summed; 0 for a Playground key, whose sends are not charged.
         */
        get: operations["estimateBroadcast"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/broadcasts/{id}/pause": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Pause a sending broadcast
         * @description sending → paused: no more recipients are handed to a carrier, on every node within a second; parts already handed over finish. Recipients stay queued and their credits stay taken until it is resumed or cancelled. Takes no body.
         */
        post: operations["pauseBroadcast"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/broadcasts/{id}/resume": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Resume a paused broadcast
         * @description paused → sending: hand-off goes on where it stopped, at its pace and within its send window. Takes no body.
         */
        post: operations["resumeBroadcast"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/broadcasts/{id}/cancel": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Cancel a broadcast
         * @description scheduled, sending or paused → cancelled: recipients not yet handed to a carrier fail with error "cancelled" and their credits are refunded at once, exactly; parts already handed over finish. Takes no body.
         */
        post: operations["cancelBroadcast"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/broadcasts/{id}/test": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Send a test of a broadcast
         * @description Renders the message for a contact (the one named, else the first of the audience, else the sample contact) and sends it to 1 to 5 numbers as an ordinary SMS, charged as POST /v1/sms/send is; tracked links go out as their original URLs. The broadcast stays as it is.
         */
        post: operations["testSendBroadcast"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/stats/messages": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Message totals over time
         * @description Per hour or day of `timeZone` (UTC by default), from the interval holding `from` to the last that starts before `to`, every interval listed (zeros included, at most 2,000): recipients queued, sent, delivered and failed, and credits debited minus refunded, each counted when it happened. With `broadcastId`, one broadcast's; with `carrier`, one carrier connection's. Read from totals kept as recipients change, so a range of months answers as fast as a day. Replies to opt-outs are not counted. Any API key (Sms ones too) or a session.
         */
        get: operations["getMessageStats"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/stats/errors": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Top failure reasons
         * @description The errors recipients failed with in the range (carrier errors, refusals, cancellations, opt-outs), most frequent first, each with how many failed so, the number of the latest of them and when it failed. Counted per UTC day: the range is widened to whole UTC days. Any API key (Sms ones too) or a session.
         */
        get: operations["getErrorStats"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/l/{code}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Follow a tracked link
         * @description Where a recipient of a broadcast with tracked links lands from the SMS: answers 302 with the original URL in Location at once, and records the click afterwards. Every click adds to the broadcast’s `clicks` and fires LinkClicked; a recipient’s first click also adds to `uniqueClicks` and sets its `clickedAt` (GET /v1/sms/{id} of the broadcast’s message). Counters may lag the redirect by a fraction of a second. A HEAD is answered alike but counts no click. `code` is the recipient’s 14-character link code and the link’s index (one digit); anything else, well formed or not, is 404. Takes no credentials and is not rate limited.
         */
        get: operations["followLink"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/admin/carriers": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List carrier connections
         * @description Every connection by name, the one CARRIER and SMPP_URL make (`default`) first, each with its live state on the node that answers.
         */
        get: operations["listCarriers"];
        put?: never;
        /**
         * Create a carrier connection
         * @description Adds a connection of type `simulator`, `smpp` or `twilio` with that type’s config, and answers 201 with its id as a bare JSON string and a Location header. Every node starts it within 5 s; routes name it by `name`. Secrets (the SMPP password, the Twilio auth token) are write-only.
         */
        post: operations["createCarrier"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/admin/carriers/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Get a carrier connection
         * @description A connection, its config with secrets masked, and its live state on the node that answers (up, connecting, down or disabled, since when, parts in flight, parts sent in the last minute, the last error).
         */
        get: operations["getCarrier"];
        put?: never;
        post?: never;
        /**
         * Delete a carrier connection
         * @description Removes the connection; every node stops it within 5 s. 409 while a route names it.
         */
        delete: operations["deleteCarrier"];
        options?: never;
        head?: never;
        /**
         * Change a carrier connection
         * @description Changes the name, `enabled` or the config (the whole config of its type; a secret left out, or sent back as ********, stays as it was). Every node applies it within 5 s: a changed config reconnects, a disabled connection is skipped by every route. A rename carries over into the routes.
         */
        patch: operations["updateCarrier"];
        trace?: never;
    };
    "/v1/admin/routes": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Get the route table
         * @description The routes in force and the configuration version. While none is stored, the one route `+ -> [default]` at price 1.
         */
        get: operations["getRoutes"];
        /**
         * Replace the route table
         * @description Replaces every route at once. A message to a number takes the account’s own route with the longest matching prefix, else the global route with the longest matching prefix; its carriers are tried in order; its price (credits per segment per recipient) is fixed when the send or broadcast is paid for. 422 naming the entry when a carrier is unknown, a prefix repeats for the same account, an account does not exist, or no global "+" route is given.
         */
        put: operations["replaceRoutes"];
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/carriers/{connectionId}/status": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Twilio status callback
         * @description Where a twilio connection’s messages report their status (the StatusCallback the platform gives Twilio). `delivered` records a delivered receipt; `undelivered` and `failed` a failed one with ErrorCode as the error; other statuses are steps on the way and are ignored. Signed with X-Twilio-Signature (HMAC-SHA1 of the full URL and the sorted parameters with the auth token).
         */
        post: operations["twilioStatusCallback"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/carriers/{connectionId}/inbound": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Twilio inbound message
         * @description Where Twilio delivers messages sent to a twilio connection’s numbers (set it as the number’s messaging webhook): From, To and Body feed the same inbound handling as SMPP, so InboundMessage fires and STOP-family words opt the sender out. Signed with X-Twilio-Signature.
         */
        post: operations["twilioInboundMessage"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/webhooks": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List webhooks
         * @description Webhooks of the account, newest first, active or not.
         */
        get: operations["listWebhooks"];
        put?: never;
        /**
         * Register a webhook
         * @description Registers an endpoint for one event type, active at once: it receives the events that happen from now on, as signed POSTs (Standard Webhooks), retried on failure by WEBHOOK_RETRY_SCHEDULE. Answers 201 with its id as a bare JSON string and a Location header. The endpoint must be an absolute https: URL without credentials, whose host is a public address (unless WEBHOOK_ALLOW_PRIVATE_NETWORKS).
         */
        post: operations["createWebhook"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/webhooks/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Get a webhook
         * @description A webhook: its endpoint, event type and whether it is active.
         */
        get: operations["getWebhook"];
        put?: never;
        post?: never;
        /**
         * Delete a webhook
         * @description Deletes the webhook with its pending deliveries and its delivery logs.
         */
        delete: operations["deleteWebhook"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/webhooks/{id}/toggle": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        /**
         * Switch a webhook off or on
         * @description Switches an active webhook off (its pending retries end) or an inactive one back on (it receives the events that happen from then on).
         */
        put: operations["toggleWebhook"];
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/webhooks/{id}/secret": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Get the signing secret of a webhook
         * @description The secret (`whsec_` and base64) that signs the webhook's deliveries, to verify them with any Standard Webhooks library.
         */
        get: operations["getWebhookSecret"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/webhooks/{id}/secret/rotate": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Rotate the signing secret of a webhook
         * @description Replaces the signing secret and answers the new one; for 24 hours deliveries are signed with the old one too, so receivers can switch without missing any.
         */
        post: operations["rotateWebhookSecret"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/webhooks/{id}/logs": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List the delivery attempts of a webhook
         * @description The last `limit` delivery attempts of the webhook, newest first: status code, duration, error and the start of the response body. Logs are kept WEBHOOK_LOG_RETENTION_DAYS (30 by default).
         */
        get: operations["listWebhookLogs"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/webhooks/logs/{logId}/retry": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Retry a webhook delivery
         * @description Sends the event of that delivery log entry again, now, signed, as its next attempt (inactive webhooks too), and answers the new log entry.
         */
        post: operations["retryWebhookDelivery"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/webhooks/test": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Send a test delivery to a webhook
         * @description Sends `payload` (a string holding a JSON document, else 422) to the webhook once, now, signed like any delivery (inactive webhooks too), and answers its log entry. It is never retried automatically; POST /v1/webhooks/logs/{logId}/retry sends it again.
         */
        post: operations["testWebhook"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/stats/webhooks": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Webhook delivery attempts over time
         * @description The account's webhook delivery attempts per local hour or day of `timeZone` (UTC by default), by outcome: delivered (a 2xx), retried (failed, and an automatic retry was due), failed (failed, and none was). Every interval from the one holding `from` to the one holding the instant before `to` is listed, whole, zeros included; at most 2000, else 422. Counted from the attempt log as it grows (a second or so behind it) and kept after the log's retention. With the backlog now: deliveries not finished and when the longest-waiting was due.
         */
        get: operations["getWebhookStats"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/push/tokens": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Issue a push token
         * @description Issues a signed token that lets a browser read some channels of your account, for `ttlSeconds` (an hour by default): 1 to 100 channels, duplicates counting once, and at most 8192 bytes together as JSON, since the token carries them in the stream's URL (else 422). Costs no credits.
         */
        post: operations["issuePushToken"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/push/publish": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Publish an event to a channel
         * @description Publishes an event to a channel of your account: it is kept in the channel's history for replay (see PUSH_HISTORY_SIZE and PUSH_HISTORY_TTL_S) and sent to every stream reading the channel, on every node. The body may hold at most 65536 bytes (64 KiB; else 413). The event name may not hold a line break, nor be "connected" (else 422). Costs no credits.
         */
        post: operations["publishPushEvent"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/push/stream": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Read channels as Server-Sent Events
         * @description Opens a Server-Sent Events stream of the token's channels (for EventSource). Anonymous: the push token from POST /v1/push/tokens, in the `token` query parameter, is the credential; a request without a valid, unexpired token is a 401 whatever else is wrong with it. With Last-Event-ID (or `lastEventId`), the events after it still in the history are replayed first. The stream ends when the token expires. Not rate limited. CORS: pages of the origins in PUSH_CORS_ORIGINS may open it.
         */
        get: operations["streamPushEvents"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
}
export type webhooks = Record<string, never>;
export interface components {
    schemas: {
        /** @description RFC 9457 problem details (content type application/problem+json) */
        Problem: {
            /** Format: uri */
            type: string;
            title: string;
            status: number;
            detail: string;
            instance?: string;
            errors?: {
                field: string;
                message: string;
            }[];
        };
    };
    responses: never;
    parameters: never;
    requestBodies: never;
    headers: never;
    pathItems: never;
}
export type $defs = Record<string, never>;
export interface operations {
    getHealth: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        status: string;
                    };
                };
            };
            /** @description Malformed request: an HTTP/1.1 request has no Host header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Validation failed: `errors` names every bad field (a query, path or body value; text holding U+0000 or a lone surrogate is refused everywhere) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unexpected error: the response has a fixed text; the details are only in the server log */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The server is shutting down and takes no new requests: send the request again (to another node, if there is one) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    getReadiness: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        status: string;
                    };
                };
            };
            /** @description Malformed request: an HTTP/1.1 request has no Host header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Validation failed: `errors` names every bad field (a query, path or body value; text holding U+0000 or a lone surrogate is refused everywhere) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unexpected error: the response has a fixed text; the details are only in the server log */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The store is not reachable, or the server is shutting down */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    signUp: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /**
                     * Format: email
                     * @example ops@example.com
                     */
                    email: string;
                    /** @description At least 10 characters */
                    password: string;
                    /** @example Acme Ltd */
                    accountName?: string;
                };
            };
        };
        responses: {
            /** @description Created */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Format: uuid */
                        accountId: string;
                        /** Format: uuid */
                        userId: string;
                    };
                };
            };
            /** @description Malformed request: the body is not valid JSON (or is empty under a JSON content type), Content-Length does not match it, or an HTTP/1.1 request has no Host header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Sign-up is disabled on this platform (ALLOW_SIGNUP=false) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description An account with this email already exists */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The request body is over the size limit (BODY_LIMIT_BYTES, 1 MiB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The content type of the body is missing, malformed or not one this endpoint takes: send JSON (application/json) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Validation failed: `errors` names every bad field (a query, path or body value; text holding U+0000 or a lone surrogate is refused everywhere) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many sign-ups and logins from this address; send again after Retry-After seconds */
            429: {
                headers: {
                    /** @description Seconds to wait before sending again */
                    "retry-after"?: number;
                    /** @description Requests allowed in the window */
                    "ratelimit-limit"?: number;
                    /** @description Requests left in the window (0) */
                    "ratelimit-remaining"?: number;
                    /** @description Seconds until the window resets */
                    "ratelimit-reset"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unexpected error: the response has a fixed text; the details are only in the server log */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The server is shutting down and takes no new requests: send the request again (to another node, if there is one) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    logIn: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    email: string;
                    password: string;
                };
            };
        };
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @description Session JWT; send as Authorization: Bearer <token> */
                        token: string;
                        /**
                         * Format: date-time
                         * @example 2026-11-21T10:00:00.000Z
                         */
                        expiresAt: string;
                    };
                };
            };
            /** @description Malformed request: the body is not valid JSON (or is empty under a JSON content type), Content-Length does not match it, or an HTTP/1.1 request has no Host header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Invalid email or password */
            401: {
                headers: {
                    /** @description Always `Bearer` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The request body is over the size limit (BODY_LIMIT_BYTES, 1 MiB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The content type of the body is missing, malformed or not one this endpoint takes: send JSON (application/json) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Validation failed: `errors` names every bad field (a query, path or body value; text holding U+0000 or a lone surrogate is refused everywhere) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many login attempts for this email or from this address; send again after Retry-After seconds */
            429: {
                headers: {
                    /** @description Seconds to wait before sending again */
                    "retry-after"?: number;
                    /** @description Requests allowed in the window */
                    "ratelimit-limit"?: number;
                    /** @description Requests left in the window (0) */
                    "ratelimit-remaining"?: number;
                    /** @description Seconds until the window resets */
                    "ratelimit-reset"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unexpected error: the response has a fixed text; the details are only in the server log */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The server is shutting down and takes no new requests: send the request again (to another node, if there is one) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    getAccount: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Format: uuid */
                        id: string;
                        name: string;
                        /** @description SMS credits */
                        balance: number;
                        /** @description LowBalance fires when a debit takes the balance below this */
                        lowBalanceThreshold: number;
                        /** @description Numbers whose inbound SMS belong to this account */
                        inboundNumbers: string[];
                        /**
                         * Format: date-time
                         * @example 2026-11-21T10:00:00.000Z
                         */
                        createdAt: string;
                    };
                };
            };
            /** @description Malformed request: an HTTP/1.1 request has no Host header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, invalid, expired or revoked credentials (send Authorization: Bearer <API key or session JWT>) */
            401: {
                headers: {
                    /** @description Always `Bearer` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Validation failed: `errors` names every bad field (a query, path or body value; text holding U+0000 or a lone surrogate is refused everywhere) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Rate limited (RATE_LIMIT_PER_SECOND per API key, session or address); send again after Retry-After seconds */
            429: {
                headers: {
                    /** @description Seconds to wait before sending again */
                    "retry-after"?: number;
                    /** @description Requests allowed in the window */
                    "ratelimit-limit"?: number;
                    /** @description Requests left in the window (0) */
                    "ratelimit-remaining"?: number;
                    /** @description Seconds until the window resets */
                    "ratelimit-reset"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unexpected error: the response has a fixed text; the details are only in the server log */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The server is shutting down and takes no new requests: send the request again (to another node, if there is one) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    updateAccount: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    name?: string;
                    lowBalanceThreshold?: number;
                    /** @description Replaces the numbers whose inbound SMS belong to this account; a number given twice counts once */
                    inboundNumbers?: string[];
                };
            };
        };
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Format: uuid */
                        id: string;
                        name: string;
                        /** @description SMS credits */
                        balance: number;
                        /** @description LowBalance fires when a debit takes the balance below this */
                        lowBalanceThreshold: number;
                        /** @description Numbers whose inbound SMS belong to this account */
                        inboundNumbers: string[];
                        /**
                         * Format: date-time
                         * @example 2026-11-21T10:00:00.000Z
                         */
                        createdAt: string;
                    };
                };
            };
            /** @description Malformed request: the body is not valid JSON (or is empty under a JSON content type), Content-Length does not match it, or an HTTP/1.1 request has no Host header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, invalid, expired or revoked credentials (send Authorization: Bearer <session JWT>) */
            401: {
                headers: {
                    /** @description Always `Bearer` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description An API key was sent: this endpoint takes a dashboard session only */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description An inbound number belongs to another account */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The request body is over the size limit (BODY_LIMIT_BYTES, 1 MiB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The content type of the body is missing, malformed or not one this endpoint takes: send JSON (application/json) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Validation failed: `errors` names every bad field (a query, path or body value; text holding U+0000 or a lone surrogate is refused everywhere) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Rate limited (RATE_LIMIT_PER_SECOND per API key, session or address); send again after Retry-After seconds */
            429: {
                headers: {
                    /** @description Seconds to wait before sending again */
                    "retry-after"?: number;
                    /** @description Requests allowed in the window */
                    "ratelimit-limit"?: number;
                    /** @description Requests left in the window (0) */
                    "ratelimit-remaining"?: number;
                    /** @description Seconds until the window resets */
                    "ratelimit-reset"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unexpected error: the response has a fixed text; the details are only in the server log */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The server is shutting down and takes no new requests: send the request again (to another node, if there is one) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    addCredits: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Account id (UUID) */
                accountId: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    amount: number;
                };
            };
        };
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        balance: number;
                    };
                };
            };
            /** @description Malformed request: the body is not valid JSON (or is empty under a JSON content type), Content-Length does not match it, or an HTTP/1.1 request has no Host header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, invalid, expired or revoked credentials (send Authorization: Bearer <ADMIN_TOKEN>) */
            401: {
                headers: {
                    /** @description Always `Bearer` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description An API key was sent: this endpoint takes the operator token (ADMIN_TOKEN) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The account does not exist */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The request body is over the size limit (BODY_LIMIT_BYTES, 1 MiB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The content type of the body is missing, malformed or not one this endpoint takes: send JSON (application/json) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Validation failed: `errors` names every bad field (a query, path or body value; text holding U+0000 or a lone surrogate is refused everywhere) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Rate limited (RATE_LIMIT_PER_SECOND per API key, session or address); send again after Retry-After seconds */
            429: {
                headers: {
                    /** @description Seconds to wait before sending again */
                    "retry-after"?: number;
                    /** @description Requests allowed in the window */
                    "ratelimit-limit"?: number;
                    /** @description Requests left in the window (0) */
                    "ratelimit-remaining"?: number;
                    /** @description Seconds until the window resets */
                    "ratelimit-reset"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unexpected error: the response has a fixed text; the details are only in the server log */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The server is shutting down and takes no new requests: send the request again (to another node, if there is one) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    listKeys: {
        parameters: {
            query?: {
                /** @description Page to return, from 1 */
                pageNumber?: number;
                /** @description Items per page, 1 to 100 */
                pageSize?: number;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        items: {
                            /** Format: uuid */
                            id: string;
                            name: string | null;
                            /**
                             * @description The first 12 characters of the key
                             * @example mk_live_4fQ9
                             */
                            prefix: string;
                            /**
                             * @description Sms: send and manage SMS only; Full: everything; Playground: sandbox, nothing really sent, no credits used
                             * @enum {unknown}
                             */
                            permission: "Sms" | "Full" | "Playground";
                            /**
                             * Format: date-time
                             * @example 2026-11-21T10:00:00.000Z
                             */
                            createdAt: string;
                            /** @description May lag by up to 60 seconds; null if never used */
                            lastUsedAt: string | null;
                        }[];
                        totalCount: number;
                        pageNumber: number;
                        totalPages: number;
                        hasNextPage: boolean;
                        hasPreviousPage: boolean;
                    };
                };
            };
            /** @description Malformed request: an HTTP/1.1 request has no Host header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, invalid, expired or revoked credentials (send Authorization: Bearer <session JWT>) */
            401: {
                headers: {
                    /** @description Always `Bearer` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description An API key was sent: this endpoint takes a dashboard session only */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Validation failed: `errors` names every bad field (a query, path or body value; text holding U+0000 or a lone surrogate is refused everywhere) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Rate limited (RATE_LIMIT_PER_SECOND per API key, session or address); send again after Retry-After seconds */
            429: {
                headers: {
                    /** @description Seconds to wait before sending again */
                    "retry-after"?: number;
                    /** @description Requests allowed in the window */
                    "ratelimit-limit"?: number;
                    /** @description Requests left in the window (0) */
                    "ratelimit-remaining"?: number;
                    /** @description Seconds until the window resets */
                    "ratelimit-reset"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unexpected error: the response has a fixed text; the details are only in the server log */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The server is shutting down and takes no new requests: send the request again (to another node, if there is one) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    createKey: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** @description Optional: without a body, the key is a Full key without a name */
        requestBody?: {
            content: {
                "application/json": {
                    /** @example production backend */
                    name?: string;
                    /**
                     * @description Sms: send and manage SMS only; Full: everything; Playground: sandbox, nothing really sent, no credits used
                     * @enum {unknown}
                     */
                    permission?: "Sms" | "Full" | "Playground";
                };
            };
        };
        responses: {
            /** @description The raw API key, shown only this once */
            201: {
                headers: {
                    /** @description Always `no-store`: the key is shown only this once */
                    "cache-control": string;
                    [name: string]: unknown;
                };
                content: {
                    /** @example mk_live_4fQ9kT2mWbX7cZ1pLs8vNd3rHy6uJa0e */
                    "application/json": string;
                };
            };
            /** @description Malformed request: the body is not valid JSON (or is empty under a JSON content type), Content-Length does not match it, or an HTTP/1.1 request has no Host header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, invalid, expired or revoked credentials (send Authorization: Bearer <session JWT>) */
            401: {
                headers: {
                    /** @description Always `Bearer` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description An API key was sent: this endpoint takes a dashboard session only */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The account already holds 200 active keys; revoke one first */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The request body is over the size limit (BODY_LIMIT_BYTES, 1 MiB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The content type of the body is missing, malformed or not one this endpoint takes: send JSON (application/json) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Validation failed: `errors` names every bad field (a query, path or body value; text holding U+0000 or a lone surrogate is refused everywhere) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Rate limited (RATE_LIMIT_PER_SECOND per API key, session or address); send again after Retry-After seconds */
            429: {
                headers: {
                    /** @description Seconds to wait before sending again */
                    "retry-after"?: number;
                    /** @description Requests allowed in the window */
                    "ratelimit-limit"?: number;
                    /** @description Requests left in the window (0) */
                    "ratelimit-remaining"?: number;
                    /** @description Seconds until the window resets */
                    "ratelimit-reset"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unexpected error: the response has a fixed text; the details are only in the server log */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The server is shutting down and takes no new requests: send the request again (to another node, if there is one) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    revokeKey: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description API key id (UUID) */
                keyId: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Revoked */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Malformed request: the body is not valid JSON (or is empty under a JSON content type), Content-Length does not match it, or an HTTP/1.1 request has no Host header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, invalid, expired or revoked credentials (send Authorization: Bearer <session JWT>) */
            401: {
                headers: {
                    /** @description Always `Bearer` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description An API key was sent: this endpoint takes a dashboard session only */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The key does not exist, is already revoked, or belongs to another account */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The request body is over the size limit (BODY_LIMIT_BYTES, 1 MiB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The content type of the body is missing, malformed or not one this endpoint takes: send JSON (application/json) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Validation failed: `errors` names every bad field (a query, path or body value; text holding U+0000 or a lone surrogate is refused everywhere) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Rate limited (RATE_LIMIT_PER_SECOND per API key, session or address); send again after Retry-After seconds */
            429: {
                headers: {
                    /** @description Seconds to wait before sending again */
                    "retry-after"?: number;
                    /** @description Requests allowed in the window */
                    "ratelimit-limit"?: number;
                    /** @description Requests left in the window (0) */
                    "ratelimit-remaining"?: number;
                    /** @description Seconds until the window resets */
                    "ratelimit-reset"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unexpected error: the response has a fixed text; the details are only in the server log */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The server is shutting down and takes no new requests: send the request again (to another node, if there is one) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    importContacts: {
        parameters: {
            query?: {
                /** @description Also add every imported contact to this list */
                contactListId?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** @description CSV with a header row: a phoneNumber column (also phone, mobile, msisdn), optional firstName, lastName, email; every other column becomes an attribute */
        requestBody: {
            content: {
                /**
                 * @example phoneNumber,firstName,plan
                 *     +14155550100,Ada,gold
                 */
                "text/csv": string;
            };
        };
        responses: {
            /** @description Accepted */
            202: {
                headers: {
                    /** @description The path of the resource: /v1/contacts/imports/{id} */
                    location: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Format: uuid */
                        importId: string;
                    };
                };
            };
            /** @description Malformed request: the body is not valid JSON (or is empty under a JSON content type), Content-Length does not match it, or an HTTP/1.1 request has no Host header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, invalid, expired or revoked credentials (send Authorization: Bearer <API key or session JWT>) */
            401: {
                headers: {
                    /** @description Always `Bearer` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description An Sms API key was sent: this endpoint takes a Full or Playground key, or a session */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description contactListId names no list of this account */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The upload is over IMPORT_MAX_BYTES (512 MiB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The body is not text/csv (or application/csv) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Validation failed: `errors` names every bad field (a query, path or body value; text holding U+0000 or a lone surrogate is refused everywhere) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Rate limited (RATE_LIMIT_PER_SECOND per API key, session or address); send again after Retry-After seconds */
            429: {
                headers: {
                    /** @description Seconds to wait before sending again */
                    "retry-after"?: number;
                    /** @description Requests allowed in the window */
                    "ratelimit-limit"?: number;
                    /** @description Requests left in the window (0) */
                    "ratelimit-remaining"?: number;
                    /** @description Seconds until the window resets */
                    "ratelimit-reset"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unexpected error: the response has a fixed text; the details are only in the server log */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The server is shutting down and takes no new requests: send the request again (to another node, if there is one) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    getContactImport: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Resource id (UUID) */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Format: uuid */
                        id: string;
                        /** @enum {unknown} */
                        status: "processing" | "completed" | "failed";
                        contactListId: string | null;
                        rowsProcessed: number;
                        created: number;
                        existing: number;
                        invalid: number;
                        /** @description The first 1000 rejected rows (row 1 is the first data row) */
                        errors: {
                            row: number;
                            value: string;
                            reason: string;
                        }[];
                        /** @description Why the whole import stopped, if it did */
                        failure: string | null;
                        /**
                         * Format: date-time
                         * @example 2026-11-21T10:00:00.000Z
                         */
                        createdAt: string;
                        completedAt: string | null;
                    };
                };
            };
            /** @description Malformed request: an HTTP/1.1 request has no Host header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, invalid, expired or revoked credentials (send Authorization: Bearer <API key or session JWT>) */
            401: {
                headers: {
                    /** @description Always `Bearer` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description An Sms API key was sent: this endpoint takes a Full or Playground key, or a session */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The import does not exist, or belongs to another account */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Validation failed: `errors` names every bad field (a query, path or body value; text holding U+0000 or a lone surrogate is refused everywhere) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Rate limited (RATE_LIMIT_PER_SECOND per API key, session or address); send again after Retry-After seconds */
            429: {
                headers: {
                    /** @description Seconds to wait before sending again */
                    "retry-after"?: number;
                    /** @description Requests allowed in the window */
                    "ratelimit-limit"?: number;
                    /** @description Requests left in the window (0) */
                    "ratelimit-remaining"?: number;
                    /** @description Seconds until the window resets */
                    "ratelimit-reset"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unexpected error: the response has a fixed text; the details are only in the server log */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The server is shutting down and takes no new requests: send the request again (to another node, if there is one) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    listContacts: {
        parameters: {
            query?: {
                /** @description Page to return, from 1 */
                pageNumber?: number;
                /** @description Items per page, 1 to 100 */
                pageSize?: number;
                /** @description Substring of the phone number, names or email; any case */
                search?: string;
                /** @description Only members of this list */
                contactListId?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        items: {
                            /** Format: uuid */
                            id: string;
                            /** @example +14155550100 */
                            phoneNumber: string;
                            firstName: string | null;
                            lastName: string | null;
                            email: string | null;
                            country: string | null;
                            optedOut: boolean;
                            /**
                             * @description Custom fields: names of letters, digits, _ and - (at most 64); string or number values
                             * @example {
                             *       "plan": "gold",
                             *       "age": 31
                             *     }
                             */
                            attributes: {
                                [key: string]: string | number;
                            };
                            /**
                             * Format: date-time
                             * @example 2026-11-21T10:00:00.000Z
                             */
                            createdAt: string;
                            /**
                             * Format: date-time
                             * @example 2026-11-21T10:00:00.000Z
                             */
                            updatedAt: string;
                        }[];
                        totalCount: number;
                        pageNumber: number;
                        totalPages: number;
                        hasNextPage: boolean;
                        hasPreviousPage: boolean;
                    };
                };
            };
            /** @description Malformed request: an HTTP/1.1 request has no Host header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, invalid, expired or revoked credentials (send Authorization: Bearer <API key or session JWT>) */
            401: {
                headers: {
                    /** @description Always `Bearer` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description An Sms API key was sent: this endpoint takes a Full or Playground key, or a session */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description contactListId names no list of this account */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Validation failed: `errors` names every bad field (a query, path or body value; text holding U+0000 or a lone surrogate is refused everywhere) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Rate limited (RATE_LIMIT_PER_SECOND per API key, session or address); send again after Retry-After seconds */
            429: {
                headers: {
                    /** @description Seconds to wait before sending again */
                    "retry-after"?: number;
                    /** @description Requests allowed in the window */
                    "ratelimit-limit"?: number;
                    /** @description Requests left in the window (0) */
                    "ratelimit-remaining"?: number;
                    /** @description Seconds until the window resets */
                    "ratelimit-reset"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unexpected error: the response has a fixed text; the details are only in the server log */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The server is shutting down and takes no new requests: send the request again (to another node, if there is one) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    createContacts: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "phoneNumbers": "+233201234567, +14155550100"
                 *     }
                 */
                "application/json": {
                    /**
                     * @description Comma-separated phone numbers, each a valid phone number in international format: + or 00 and the country code, spaces and punctuation allowed, in a range that is assigned (checked against libphonenumber's metadata); stored as E.164; whitespace around commas is ignored
                     * @example +233201234567,+14155550100
                     */
                    phoneNumbers: string;
                    /** @description Also add every contact to this list */
                    contactListId?: string;
                };
            };
        };
        responses: {
            /** @description Created */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        created: number;
                        existing: number;
                        /** @description Repeats of a number earlier in the same string */
                        duplicates: number;
                        invalid: {
                            value: string;
                            reason: string;
                        }[];
                        /** @description One id per distinct valid number, in input order */
                        contactIds: string[];
                    };
                };
            };
            /** @description Malformed request: the body is not valid JSON (or is empty under a JSON content type), Content-Length does not match it, or an HTTP/1.1 request has no Host header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, invalid, expired or revoked credentials (send Authorization: Bearer <API key or session JWT>) */
            401: {
                headers: {
                    /** @description Always `Bearer` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description An Sms API key was sent: this endpoint takes a Full or Playground key, or a session */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description contactListId names no list of this account */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The request body is over the size limit (BODY_LIMIT_BYTES, 1 MiB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The content type of the body is missing, malformed or not one this endpoint takes: send JSON (application/json) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Validation failed: `errors` names every bad field (a query, path or body value; text holding U+0000 or a lone surrogate is refused everywhere) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Rate limited (RATE_LIMIT_PER_SECOND per API key, session or address); send again after Retry-After seconds */
            429: {
                headers: {
                    /** @description Seconds to wait before sending again */
                    "retry-after"?: number;
                    /** @description Requests allowed in the window */
                    "ratelimit-limit"?: number;
                    /** @description Requests left in the window (0) */
                    "ratelimit-remaining"?: number;
                    /** @description Seconds until the window resets */
                    "ratelimit-reset"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unexpected error: the response has a fixed text; the details are only in the server log */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The server is shutting down and takes no new requests: send the request again (to another node, if there is one) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    createContact: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "phoneNumber": "+14155550100",
                 *       "firstName": "Ada",
                 *       "lastName": "Lovelace",
                 *       "email": "ada@example.com",
                 *       "attributes": {
                 *         "plan": "gold",
                 *         "age": 36
                 *       }
                 *     }
                 */
                "application/json": {
                    /**
                     * @description A valid phone number in international format: + or 00 and the country code, spaces and punctuation allowed, in a range that is assigned (checked against libphonenumber's metadata); stored as E.164
                     * @example +14155550100
                     */
                    phoneNumber: string;
                    firstName?: string;
                    lastName?: string;
                    /** Format: email */
                    email?: string;
                    /**
                     * @description Custom fields: names of letters, digits, _ and - (at most 64); string or number values
                     * @example {
                     *       "plan": "gold",
                     *       "age": 31
                     *     }
                     */
                    attributes?: {
                        [key: string]: string | number;
                    };
                    contactListId?: string;
                };
            };
        };
        responses: {
            /** @description The number was known: the existing contact, unchanged */
            200: {
                headers: {
                    /** @description The path of the resource: /v1/contacts/{id} */
                    location: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Format: uuid */
                        id: string;
                        /** @example +14155550100 */
                        phoneNumber: string;
                        firstName: string | null;
                        lastName: string | null;
                        email: string | null;
                        country: string | null;
                        optedOut: boolean;
                        /**
                         * @description Custom fields: names of letters, digits, _ and - (at most 64); string or number values
                         * @example {
                         *       "plan": "gold",
                         *       "age": 31
                         *     }
                         */
                        attributes: {
                            [key: string]: string | number;
                        };
                        /**
                         * Format: date-time
                         * @example 2026-11-21T10:00:00.000Z
                         */
                        createdAt: string;
                        /**
                         * Format: date-time
                         * @example 2026-11-21T10:00:00.000Z
                         */
                        updatedAt: string;
                    };
                };
            };
            /** @description Created */
            201: {
                headers: {
                    /** @description The path of the resource: /v1/contacts/{id} */
                    location: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Format: uuid */
                        id: string;
                        /** @example +14155550100 */
                        phoneNumber: string;
                        firstName: string | null;
                        lastName: string | null;
                        email: string | null;
                        country: string | null;
                        optedOut: boolean;
                        /**
                         * @description Custom fields: names of letters, digits, _ and - (at most 64); string or number values
                         * @example {
                         *       "plan": "gold",
                         *       "age": 31
                         *     }
                         */
                        attributes: {
                            [key: string]: string | number;
                        };
                        /**
                         * Format: date-time
                         * @example 2026-11-21T10:00:00.000Z
                         */
                        createdAt: string;
                        /**
                         * Format: date-time
                         * @example 2026-11-21T10:00:00.000Z
                         */
                        updatedAt: string;
                    };
                };
            };
            /** @description Malformed request: the body is not valid JSON (or is empty under a JSON content type), Content-Length does not match it, or an HTTP/1.1 request has no Host header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, invalid, expired or revoked credentials (send Authorization: Bearer <API key or session JWT>) */
            401: {
                headers: {
                    /** @description Always `Bearer` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description An Sms API key was sent: this endpoint takes a Full or Playground key, or a session */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description contactListId names no list of this account */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The request body is over the size limit (BODY_LIMIT_BYTES, 1 MiB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The content type of the body is missing, malformed or not one this endpoint takes: send JSON (application/json) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Validation failed: `errors` names every bad field (a query, path or body value; text holding U+0000 or a lone surrogate is refused everywhere) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Rate limited (RATE_LIMIT_PER_SECOND per API key, session or address); send again after Retry-After seconds */
            429: {
                headers: {
                    /** @description Seconds to wait before sending again */
                    "retry-after"?: number;
                    /** @description Requests allowed in the window */
                    "ratelimit-limit"?: number;
                    /** @description Requests left in the window (0) */
                    "ratelimit-remaining"?: number;
                    /** @description Seconds until the window resets */
                    "ratelimit-reset"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unexpected error: the response has a fixed text; the details are only in the server log */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The server is shutting down and takes no new requests: send the request again (to another node, if there is one) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    getContact: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Resource id (UUID) */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Format: uuid */
                        id: string;
                        /** @example +14155550100 */
                        phoneNumber: string;
                        firstName: string | null;
                        lastName: string | null;
                        email: string | null;
                        country: string | null;
                        optedOut: boolean;
                        /**
                         * @description Custom fields: names of letters, digits, _ and - (at most 64); string or number values
                         * @example {
                         *       "plan": "gold",
                         *       "age": 31
                         *     }
                         */
                        attributes: {
                            [key: string]: string | number;
                        };
                        /**
                         * Format: date-time
                         * @example 2026-11-21T10:00:00.000Z
                         */
                        createdAt: string;
                        /**
                         * Format: date-time
                         * @example 2026-11-21T10:00:00.000Z
                         */
                        updatedAt: string;
                    };
                };
            };
            /** @description Malformed request: an HTTP/1.1 request has no Host header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, invalid, expired or revoked credentials (send Authorization: Bearer <API key or session JWT>) */
            401: {
                headers: {
                    /** @description Always `Bearer` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description An Sms API key was sent: this endpoint takes a Full or Playground key, or a session */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The contact does not exist, or belongs to another account */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Validation failed: `errors` names every bad field (a query, path or body value; text holding U+0000 or a lone surrogate is refused everywhere) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Rate limited (RATE_LIMIT_PER_SECOND per API key, session or address); send again after Retry-After seconds */
            429: {
                headers: {
                    /** @description Seconds to wait before sending again */
                    "retry-after"?: number;
                    /** @description Requests allowed in the window */
                    "ratelimit-limit"?: number;
                    /** @description Requests left in the window (0) */
                    "ratelimit-remaining"?: number;
                    /** @description Seconds until the window resets */
                    "ratelimit-reset"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unexpected error: the response has a fixed text; the details are only in the server log */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The server is shutting down and takes no new requests: send the request again (to another node, if there is one) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    deleteContact: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Resource id (UUID) */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Done */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Malformed request: the body is not valid JSON (or is empty under a JSON content type), Content-Length does not match it, or an HTTP/1.1 request has no Host header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, invalid, expired or revoked credentials (send Authorization: Bearer <API key or session JWT>) */
            401: {
                headers: {
                    /** @description Always `Bearer` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description An Sms API key was sent: this endpoint takes a Full or Playground key, or a session */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The contact does not exist, or belongs to another account */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The request body is over the size limit (BODY_LIMIT_BYTES, 1 MiB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The content type of the body is missing, malformed or not one this endpoint takes: send JSON (application/json) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Validation failed: `errors` names every bad field (a query, path or body value; text holding U+0000 or a lone surrogate is refused everywhere) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Rate limited (RATE_LIMIT_PER_SECOND per API key, session or address); send again after Retry-After seconds */
            429: {
                headers: {
                    /** @description Seconds to wait before sending again */
                    "retry-after"?: number;
                    /** @description Requests allowed in the window */
                    "ratelimit-limit"?: number;
                    /** @description Requests left in the window (0) */
                    "ratelimit-remaining"?: number;
                    /** @description Seconds until the window resets */
                    "ratelimit-reset"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unexpected error: the response has a fixed text; the details are only in the server log */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The server is shutting down and takes no new requests: send the request again (to another node, if there is one) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    updateContact: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Resource id (UUID) */
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    firstName?: string | null;
                    lastName?: string | null;
                    email?: string | null;
                    /** @description Merged into the attributes; a name set to null is removed */
                    attributes?: {
                        [key: string]: (string | number) | null;
                    };
                    optedOut?: boolean;
                };
            };
        };
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Format: uuid */
                        id: string;
                        /** @example +14155550100 */
                        phoneNumber: string;
                        firstName: string | null;
                        lastName: string | null;
                        email: string | null;
                        country: string | null;
                        optedOut: boolean;
                        /**
                         * @description Custom fields: names of letters, digits, _ and - (at most 64); string or number values
                         * @example {
                         *       "plan": "gold",
                         *       "age": 31
                         *     }
                         */
                        attributes: {
                            [key: string]: string | number;
                        };
                        /**
                         * Format: date-time
                         * @example 2026-11-21T10:00:00.000Z
                         */
                        createdAt: string;
                        /**
                         * Format: date-time
                         * @example 2026-11-21T10:00:00.000Z
                         */
                        updatedAt: string;
                    };
                };
            };
            /** @description Malformed request: the body is not valid JSON (or is empty under a JSON content type), Content-Length does not match it, or an HTTP/1.1 request has no Host header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, invalid, expired or revoked credentials (send Authorization: Bearer <API key or session JWT>) */
            401: {
                headers: {
                    /** @description Always `Bearer` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description An Sms API key was sent: this endpoint takes a Full or Playground key, or a session */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The contact does not exist, or belongs to another account */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The request body is over the size limit (BODY_LIMIT_BYTES, 1 MiB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The content type of the body is missing, malformed or not one this endpoint takes: send JSON (application/json) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Validation failed: `errors` names every bad field (a query, path or body value; text holding U+0000 or a lone surrogate is refused everywhere) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Rate limited (RATE_LIMIT_PER_SECOND per API key, session or address); send again after Retry-After seconds */
            429: {
                headers: {
                    /** @description Seconds to wait before sending again */
                    "retry-after"?: number;
                    /** @description Requests allowed in the window */
                    "ratelimit-limit"?: number;
                    /** @description Requests left in the window (0) */
                    "ratelimit-remaining"?: number;
                    /** @description Seconds until the window resets */
                    "ratelimit-reset"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unexpected error: the response has a fixed text; the details are only in the server log */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The server is shutting down and takes no new requests: send the request again (to another node, if there is one) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    exportContacts: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The CSV file, streamed as it is read */
            200: {
                headers: {
                    /** @description attachment, with the file name to save it under */
                    "content-disposition": string;
                    [name: string]: unknown;
                };
                content: {
                    "text/csv": string;
                };
            };
            /** @description Malformed request: an HTTP/1.1 request has no Host header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, invalid, expired or revoked credentials (send Authorization: Bearer <API key or session JWT>) */
            401: {
                headers: {
                    /** @description Always `Bearer` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description An Sms API key was sent: this endpoint takes a Full or Playground key, or a session */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Validation failed: `errors` names every bad field (a query, path or body value; text holding U+0000 or a lone surrogate is refused everywhere) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Rate limited (RATE_LIMIT_PER_SECOND per API key, session or address); send again after Retry-After seconds */
            429: {
                headers: {
                    /** @description Seconds to wait before sending again */
                    "retry-after"?: number;
                    /** @description Requests allowed in the window */
                    "ratelimit-limit"?: number;
                    /** @description Requests left in the window (0) */
                    "ratelimit-remaining"?: number;
                    /** @description Seconds until the window resets */
                    "ratelimit-reset"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unexpected error: the response has a fixed text; the details are only in the server log */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The server is shutting down and takes no new requests: send the request again (to another node, if there is one) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    listContactLists: {
        parameters: {
            query?: {
                /** @description Page to return, from 1 */
                pageNumber?: number;
                /** @description Items per page, 1 to 100 */
                pageSize?: number;
                search?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        items: {
                            /** Format: uuid */
                            id: string;
                            name: string;
                            description: string;
                            /** @description All members, opted-out ones included */
                            contactCount: number;
                            /**
                             * Format: date-time
                             * @example 2026-11-21T10:00:00.000Z
                             */
                            createdAt: string;
                        }[];
                        totalCount: number;
                        pageNumber: number;
                        totalPages: number;
                        hasNextPage: boolean;
                        hasPreviousPage: boolean;
                    };
                };
            };
            /** @description Malformed request: an HTTP/1.1 request has no Host header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, invalid, expired or revoked credentials (send Authorization: Bearer <API key or session JWT>) */
            401: {
                headers: {
                    /** @description Always `Bearer` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description An Sms API key was sent: this endpoint takes a Full or Playground key, or a session */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Validation failed: `errors` names every bad field (a query, path or body value; text holding U+0000 or a lone surrogate is refused everywhere) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Rate limited (RATE_LIMIT_PER_SECOND per API key, session or address); send again after Retry-After seconds */
            429: {
                headers: {
                    /** @description Seconds to wait before sending again */
                    "retry-after"?: number;
                    /** @description Requests allowed in the window */
                    "ratelimit-limit"?: number;
                    /** @description Requests left in the window (0) */
                    "ratelimit-remaining"?: number;
                    /** @description Seconds until the window resets */
                    "ratelimit-reset"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unexpected error: the response has a fixed text; the details are only in the server log */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The server is shutting down and takes no new requests: send the request again (to another node, if there is one) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    createContactList: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /**
                     * @description Must not be blank (spaces alone are refused)
                     * @example VIP customers
                     */
                    name: string;
                    description?: string;
                };
            };
        };
        responses: {
            /** @description The id of the new resource */
            201: {
                headers: {
                    /** @description The path of the resource: /v1/contact-lists/{id} */
                    location: string;
                    [name: string]: unknown;
                };
                content: {
                    /** @example 0193a5b0-7c1e-7b7a-9a55-3f1d2c4b5a69 */
                    "application/json": string;
                };
            };
            /** @description Malformed request: the body is not valid JSON (or is empty under a JSON content type), Content-Length does not match it, or an HTTP/1.1 request has no Host header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, invalid, expired or revoked credentials (send Authorization: Bearer <API key or session JWT>) */
            401: {
                headers: {
                    /** @description Always `Bearer` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description An Sms API key was sent: this endpoint takes a Full or Playground key, or a session */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The request body is over the size limit (BODY_LIMIT_BYTES, 1 MiB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The content type of the body is missing, malformed or not one this endpoint takes: send JSON (application/json) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Validation failed: `errors` names every bad field (a query, path or body value; text holding U+0000 or a lone surrogate is refused everywhere) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Rate limited (RATE_LIMIT_PER_SECOND per API key, session or address); send again after Retry-After seconds */
            429: {
                headers: {
                    /** @description Seconds to wait before sending again */
                    "retry-after"?: number;
                    /** @description Requests allowed in the window */
                    "ratelimit-limit"?: number;
                    /** @description Requests left in the window (0) */
                    "ratelimit-remaining"?: number;
                    /** @description Seconds until the window resets */
                    "ratelimit-reset"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unexpected error: the response has a fixed text; the details are only in the server log */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The server is shutting down and takes no new requests: send the request again (to another node, if there is one) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    addContactsToList: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Resource id (UUID) */
                id: string;
            };
            cookie?: never;
        };
        /** @description Exactly one of phoneNumbers (contacts are created as needed) or contactIds */
        requestBody: {
            content: {
                "application/json": {
                    /**
                     * @description Comma-separated phone numbers, each a valid phone number in international format: + or 00 and the country code, spaces and punctuation allowed, in a range that is assigned (checked against libphonenumber's metadata); stored as E.164; whitespace around commas is ignored
                     * @example +233201234567,+14155550100
                     */
                    phoneNumbers?: string;
                    contactIds?: string[];
                };
            };
        };
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @description Contacts that were not members before */
                        added: number;
                    };
                };
            };
            /** @description Malformed request: the body is not valid JSON (or is empty under a JSON content type), Content-Length does not match it, or an HTTP/1.1 request has no Host header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, invalid, expired or revoked credentials (send Authorization: Bearer <API key or session JWT>) */
            401: {
                headers: {
                    /** @description Always `Bearer` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description An Sms API key was sent: this endpoint takes a Full or Playground key, or a session */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The list, or one of contactIds, does not exist or belongs to another account */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The request body is over the size limit (BODY_LIMIT_BYTES, 1 MiB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The content type of the body is missing, malformed or not one this endpoint takes: send JSON (application/json) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Validation failed: `errors` names every bad field (a query, path or body value; text holding U+0000 or a lone surrogate is refused everywhere) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Rate limited (RATE_LIMIT_PER_SECOND per API key, session or address); send again after Retry-After seconds */
            429: {
                headers: {
                    /** @description Seconds to wait before sending again */
                    "retry-after"?: number;
                    /** @description Requests allowed in the window */
                    "ratelimit-limit"?: number;
                    /** @description Requests left in the window (0) */
                    "ratelimit-remaining"?: number;
                    /** @description Seconds until the window resets */
                    "ratelimit-reset"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unexpected error: the response has a fixed text; the details are only in the server log */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The server is shutting down and takes no new requests: send the request again (to another node, if there is one) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    removeContactFromList: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Contact list id (UUID) */
                id: string;
                /** @description Contact id (UUID) */
                contactId: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Done */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Malformed request: the body is not valid JSON (or is empty under a JSON content type), Content-Length does not match it, or an HTTP/1.1 request has no Host header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, invalid, expired or revoked credentials (send Authorization: Bearer <API key or session JWT>) */
            401: {
                headers: {
                    /** @description Always `Bearer` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description An Sms API key was sent: this endpoint takes a Full or Playground key, or a session */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The list does not exist, or the contact is not in it */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The request body is over the size limit (BODY_LIMIT_BYTES, 1 MiB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The content type of the body is missing, malformed or not one this endpoint takes: send JSON (application/json) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Validation failed: `errors` names every bad field (a query, path or body value; text holding U+0000 or a lone surrogate is refused everywhere) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Rate limited (RATE_LIMIT_PER_SECOND per API key, session or address); send again after Retry-After seconds */
            429: {
                headers: {
                    /** @description Seconds to wait before sending again */
                    "retry-after"?: number;
                    /** @description Requests allowed in the window */
                    "ratelimit-limit"?: number;
                    /** @description Requests left in the window (0) */
                    "ratelimit-remaining"?: number;
                    /** @description Seconds until the window resets */
                    "ratelimit-reset"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unexpected error: the response has a fixed text; the details are only in the server log */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The server is shutting down and takes no new requests: send the request again (to another node, if there is one) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    deleteContactList: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Resource id (UUID) */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Done */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Malformed request: the body is not valid JSON (or is empty under a JSON content type), Content-Length does not match it, or an HTTP/1.1 request has no Host header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, invalid, expired or revoked credentials (send Authorization: Bearer <API key or session JWT>) */
            401: {
                headers: {
                    /** @description Always `Bearer` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description An Sms API key was sent: this endpoint takes a Full or Playground key, or a session */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The list does not exist, or belongs to another account */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The request body is over the size limit (BODY_LIMIT_BYTES, 1 MiB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The content type of the body is missing, malformed or not one this endpoint takes: send JSON (application/json) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Validation failed: `errors` names every bad field (a query, path or body value; text holding U+0000 or a lone surrogate is refused everywhere) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Rate limited (RATE_LIMIT_PER_SECOND per API key, session or address); send again after Retry-After seconds */
            429: {
                headers: {
                    /** @description Seconds to wait before sending again */
                    "retry-after"?: number;
                    /** @description Requests allowed in the window */
                    "ratelimit-limit"?: number;
                    /** @description Requests left in the window (0) */
                    "ratelimit-remaining"?: number;
                    /** @description Seconds until the window resets */
                    "ratelimit-reset"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unexpected error: the response has a fixed text; the details are only in the server log */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The server is shutting down and takes no new requests: send the request again (to another node, if there is one) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    listSegments: {
        parameters: {
            query?: {
                /** @description Page to return, from 1 */
                pageNumber?: number;
                /** @description Items per page, 1 to 100 */
                pageSize?: number;
                /** @description Filters by name, any case */
                search?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        items: {
                            /** Format: uuid */
                            id: string;
                            name: string;
                            description: string;
                            /**
                             * @description AND: every rule must match; OR: any rule matches
                             * @enum {unknown}
                             */
                            rulesOperator: "AND" | "OR";
                            /** @description Served from a cache refreshed in the background; see the README */
                            contactCount: number;
                            /**
                             * Format: date-time
                             * @example 2026-11-21T10:00:00.000Z
                             */
                            createdAt: string;
                        }[];
                        totalCount: number;
                        pageNumber: number;
                        totalPages: number;
                        hasNextPage: boolean;
                        hasPreviousPage: boolean;
                    };
                };
            };
            /** @description Malformed request: an HTTP/1.1 request has no Host header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, invalid, expired or revoked credentials (send Authorization: Bearer <API key or session JWT>) */
            401: {
                headers: {
                    /** @description Always `Bearer` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description An Sms API key was sent: this endpoint takes a Full or Playground key, or a session */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Validation failed: `errors` names every bad field (a query, path or body value; text holding U+0000 or a lone surrogate is refused everywhere) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Rate limited (RATE_LIMIT_PER_SECOND per API key, session or address); send again after Retry-After seconds */
            429: {
                headers: {
                    /** @description Seconds to wait before sending again */
                    "retry-after"?: number;
                    /** @description Requests allowed in the window */
                    "ratelimit-limit"?: number;
                    /** @description Requests left in the window (0) */
                    "ratelimit-remaining"?: number;
                    /** @description Seconds until the window resets */
                    "ratelimit-reset"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unexpected error: the response has a fixed text; the details are only in the server log */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The server is shutting down and takes no new requests: send the request again (to another node, if there is one) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    createSegment: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "name": "Gold customers over 30",
                 *       "description": "For the loyalty campaign",
                 *       "rulesOperator": "AND",
                 *       "rules": "[{\"field\":\"attributes.plan\",\"operator\":\"equals\",\"value\":\"gold\"},{\"field\":\"attributes.age\",\"operator\":\"greaterThan\",\"value\":\"30\"}]"
                 *     }
                 */
                "application/json": {
                    /**
                     * @description Must not be blank (spaces alone are refused)
                     * @example Gold customers over 30
                     */
                    name: string;
                    description?: string;
                    /**
                     * @description AND: every rule must match; OR: any rule matches
                     * @enum {unknown}
                     */
                    rulesOperator?: "AND" | "OR";
                    /**
                     * @description A JSON array of at most 100 {field, operator, value} objects, serialised as a string. field: phoneNumber, firstName, lastName, email, country, createdAt, contactListId or attributes.<name>; operator: equals, notEquals, contains, startsWith, greaterThan, lessThan; value: a string. "[]" matches every contact.
                     * @example [{"field":"attributes.plan","operator":"equals","value":"gold"},{"field":"attributes.age","operator":"greaterThan","value":"30"}]
                     */
                    rules?: string;
                };
            };
        };
        responses: {
            /** @description The id of the new resource */
            201: {
                headers: {
                    /** @description The path of the resource: /v1/audience/segments/{id} */
                    location: string;
                    [name: string]: unknown;
                };
                content: {
                    /** @example 0193a5b0-7c1e-7b7a-9a55-3f1d2c4b5a69 */
                    "application/json": string;
                };
            };
            /** @description Malformed request: the body is not valid JSON (or is empty under a JSON content type), Content-Length does not match it, or an HTTP/1.1 request has no Host header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, invalid, expired or revoked credentials (send Authorization: Bearer <API key or session JWT>) */
            401: {
                headers: {
                    /** @description Always `Bearer` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description An Sms API key was sent: this endpoint takes a Full or Playground key, or a session */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description A contactListId rule names no list of this account */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The request body is over the size limit (BODY_LIMIT_BYTES, 1 MiB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The content type of the body is missing, malformed or not one this endpoint takes: send JSON (application/json) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Validation failed: `errors` names every bad field (a query, path or body value; text holding U+0000 or a lone surrogate is refused everywhere) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Rate limited (RATE_LIMIT_PER_SECOND per API key, session or address); send again after Retry-After seconds */
            429: {
                headers: {
                    /** @description Seconds to wait before sending again */
                    "retry-after"?: number;
                    /** @description Requests allowed in the window */
                    "ratelimit-limit"?: number;
                    /** @description Requests left in the window (0) */
                    "ratelimit-remaining"?: number;
                    /** @description Seconds until the window resets */
                    "ratelimit-reset"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unexpected error: the response has a fixed text; the details are only in the server log */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The server is shutting down and takes no new requests: send the request again (to another node, if there is one) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    previewSegmentRules: {
        parameters: {
            query?: {
                /** @description Contacts to sample, 0 to 100 */
                limit?: number;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "rulesOperator": "OR",
                 *       "rules": "[{\"field\":\"firstName\",\"operator\":\"startsWith\",\"value\":\"él\"},{\"field\":\"country\",\"operator\":\"equals\",\"value\":\"GH\"}]"
                 *     }
                 */
                "application/json": {
                    /**
                     * @description AND: every rule must match; OR: any rule matches
                     * @enum {unknown}
                     */
                    rulesOperator?: "AND" | "OR";
                    /**
                     * @description A JSON array of at most 100 {field, operator, value} objects, serialised as a string. field: phoneNumber, firstName, lastName, email, country, createdAt, contactListId or attributes.<name>; operator: equals, notEquals, contains, startsWith, greaterThan, lessThan; value: a string. "[]" matches every contact.
                     * @example [{"field":"attributes.plan","operator":"equals","value":"gold"},{"field":"attributes.age","operator":"greaterThan","value":"30"}]
                     */
                    rules?: string;
                };
            };
        };
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @description Matching contacts a broadcast would send to now */
                        count: number;
                        /** @description Matching contacts left out because they opted out */
                        optedOut: number;
                        sample: {
                            /** Format: uuid */
                            id: string;
                            /** @example +14155550100 */
                            phoneNumber: string;
                            firstName: string | null;
                            lastName: string | null;
                            email: string | null;
                            country: string | null;
                            optedOut: boolean;
                            /**
                             * @description Custom fields: names of letters, digits, _ and - (at most 64); string or number values
                             * @example {
                             *       "plan": "gold",
                             *       "age": 31
                             *     }
                             */
                            attributes: {
                                [key: string]: string | number;
                            };
                            /**
                             * Format: date-time
                             * @example 2026-11-21T10:00:00.000Z
                             */
                            createdAt: string;
                            /**
                             * Format: date-time
                             * @example 2026-11-21T10:00:00.000Z
                             */
                            updatedAt: string;
                        }[];
                    };
                };
            };
            /** @description Malformed request: the body is not valid JSON (or is empty under a JSON content type), Content-Length does not match it, or an HTTP/1.1 request has no Host header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, invalid, expired or revoked credentials (send Authorization: Bearer <API key or session JWT>) */
            401: {
                headers: {
                    /** @description Always `Bearer` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description An Sms API key was sent: this endpoint takes a Full or Playground key, or a session */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description A contactListId rule names no list of this account */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The request body is over the size limit (BODY_LIMIT_BYTES, 1 MiB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The content type of the body is missing, malformed or not one this endpoint takes: send JSON (application/json) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Validation failed: `errors` names every bad field (a query, path or body value; text holding U+0000 or a lone surrogate is refused everywhere) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Rate limited (RATE_LIMIT_PER_SECOND per API key, session or address); send again after Retry-After seconds */
            429: {
                headers: {
                    /** @description Seconds to wait before sending again */
                    "retry-after"?: number;
                    /** @description Requests allowed in the window */
                    "ratelimit-limit"?: number;
                    /** @description Requests left in the window (0) */
                    "ratelimit-remaining"?: number;
                    /** @description Seconds until the window resets */
                    "ratelimit-reset"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unexpected error: the response has a fixed text; the details are only in the server log */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The server is shutting down and takes no new requests: send the request again (to another node, if there is one) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    getSegment: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Resource id (UUID) */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Format: uuid */
                        id: string;
                        name: string;
                        description: string;
                        /**
                         * @description AND: every rule must match; OR: any rule matches
                         * @enum {unknown}
                         */
                        rulesOperator: "AND" | "OR";
                        rules: string;
                        /** @description Contacts a broadcast would send to now (opted-out ones excluded) */
                        contactCount: number;
                        /**
                         * Format: date-time
                         * @example 2026-11-21T10:00:00.000Z
                         */
                        createdAt: string;
                        /**
                         * Format: date-time
                         * @example 2026-11-21T10:00:00.000Z
                         */
                        updatedAt: string;
                    };
                };
            };
            /** @description Malformed request: an HTTP/1.1 request has no Host header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, invalid, expired or revoked credentials (send Authorization: Bearer <API key or session JWT>) */
            401: {
                headers: {
                    /** @description Always `Bearer` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description An Sms API key was sent: this endpoint takes a Full or Playground key, or a session */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The segment does not exist, or belongs to another account */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Validation failed: `errors` names every bad field (a query, path or body value; text holding U+0000 or a lone surrogate is refused everywhere) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Rate limited (RATE_LIMIT_PER_SECOND per API key, session or address); send again after Retry-After seconds */
            429: {
                headers: {
                    /** @description Seconds to wait before sending again */
                    "retry-after"?: number;
                    /** @description Requests allowed in the window */
                    "ratelimit-limit"?: number;
                    /** @description Requests left in the window (0) */
                    "ratelimit-remaining"?: number;
                    /** @description Seconds until the window resets */
                    "ratelimit-reset"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unexpected error: the response has a fixed text; the details are only in the server log */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The server is shutting down and takes no new requests: send the request again (to another node, if there is one) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    replaceSegment: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Resource id (UUID) */
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "name": "Gold customers over 30",
                 *       "description": "For the loyalty campaign",
                 *       "rulesOperator": "AND",
                 *       "rules": "[{\"field\":\"attributes.plan\",\"operator\":\"equals\",\"value\":\"gold\"},{\"field\":\"attributes.age\",\"operator\":\"greaterThan\",\"value\":\"30\"}]"
                 *     }
                 */
                "application/json": {
                    /**
                     * @description Must not be blank (spaces alone are refused)
                     * @example Gold customers over 30
                     */
                    name: string;
                    description?: string;
                    /**
                     * @description AND: every rule must match; OR: any rule matches
                     * @enum {unknown}
                     */
                    rulesOperator?: "AND" | "OR";
                    /**
                     * @description A JSON array of at most 100 {field, operator, value} objects, serialised as a string. field: phoneNumber, firstName, lastName, email, country, createdAt, contactListId or attributes.<name>; operator: equals, notEquals, contains, startsWith, greaterThan, lessThan; value: a string. "[]" matches every contact.
                     * @example [{"field":"attributes.plan","operator":"equals","value":"gold"},{"field":"attributes.age","operator":"greaterThan","value":"30"}]
                     */
                    rules?: string;
                };
            };
        };
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Format: uuid */
                        id: string;
                        name: string;
                        description: string;
                        /**
                         * @description AND: every rule must match; OR: any rule matches
                         * @enum {unknown}
                         */
                        rulesOperator: "AND" | "OR";
                        rules: string;
                        /** @description Contacts a broadcast would send to now (opted-out ones excluded) */
                        contactCount: number;
                        /**
                         * Format: date-time
                         * @example 2026-11-21T10:00:00.000Z
                         */
                        createdAt: string;
                        /**
                         * Format: date-time
                         * @example 2026-11-21T10:00:00.000Z
                         */
                        updatedAt: string;
                    };
                };
            };
            /** @description Malformed request: the body is not valid JSON (or is empty under a JSON content type), Content-Length does not match it, or an HTTP/1.1 request has no Host header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, invalid, expired or revoked credentials (send Authorization: Bearer <API key or session JWT>) */
            401: {
                headers: {
                    /** @description Always `Bearer` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description An Sms API key was sent: this endpoint takes a Full or Playground key, or a session */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The segment, or a list a contactListId rule names, does not exist or belongs to another account */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The request body is over the size limit (BODY_LIMIT_BYTES, 1 MiB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The content type of the body is missing, malformed or not one this endpoint takes: send JSON (application/json) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Validation failed: `errors` names every bad field (a query, path or body value; text holding U+0000 or a lone surrogate is refused everywhere) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Rate limited (RATE_LIMIT_PER_SECOND per API key, session or address); send again after Retry-After seconds */
            429: {
                headers: {
                    /** @description Seconds to wait before sending again */
                    "retry-after"?: number;
                    /** @description Requests allowed in the window */
                    "ratelimit-limit"?: number;
                    /** @description Requests left in the window (0) */
                    "ratelimit-remaining"?: number;
                    /** @description Seconds until the window resets */
                    "ratelimit-reset"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unexpected error: the response has a fixed text; the details are only in the server log */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The server is shutting down and takes no new requests: send the request again (to another node, if there is one) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    deleteSegment: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Resource id (UUID) */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Done */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Malformed request: the body is not valid JSON (or is empty under a JSON content type), Content-Length does not match it, or an HTTP/1.1 request has no Host header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, invalid, expired or revoked credentials (send Authorization: Bearer <API key or session JWT>) */
            401: {
                headers: {
                    /** @description Always `Bearer` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description An Sms API key was sent: this endpoint takes a Full or Playground key, or a session */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The segment does not exist, or belongs to another account */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The request body is over the size limit (BODY_LIMIT_BYTES, 1 MiB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The content type of the body is missing, malformed or not one this endpoint takes: send JSON (application/json) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Validation failed: `errors` names every bad field (a query, path or body value; text holding U+0000 or a lone surrogate is refused everywhere) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Rate limited (RATE_LIMIT_PER_SECOND per API key, session or address); send again after Retry-After seconds */
            429: {
                headers: {
                    /** @description Seconds to wait before sending again */
                    "retry-after"?: number;
                    /** @description Requests allowed in the window */
                    "ratelimit-limit"?: number;
                    /** @description Requests left in the window (0) */
                    "ratelimit-remaining"?: number;
                    /** @description Seconds until the window resets */
                    "ratelimit-reset"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unexpected error: the response has a fixed text; the details are only in the server log */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The server is shutting down and takes no new requests: send the request again (to another node, if there is one) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    previewSegment: {
        parameters: {
            query?: {
                /** @description Contacts to sample, 0 to 100 */
                limit?: number;
            };
            header?: never;
            path: {
                /** @description Resource id (UUID) */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @description Matching contacts a broadcast would send to now */
                        count: number;
                        /** @description Matching contacts left out because they opted out */
                        optedOut: number;
                        sample: {
                            /** Format: uuid */
                            id: string;
                            /** @example +14155550100 */
                            phoneNumber: string;
                            firstName: string | null;
                            lastName: string | null;
                            email: string | null;
                            country: string | null;
                            optedOut: boolean;
                            /**
                             * @description Custom fields: names of letters, digits, _ and - (at most 64); string or number values
                             * @example {
                             *       "plan": "gold",
                             *       "age": 31
                             *     }
                             */
                            attributes: {
                                [key: string]: string | number;
                            };
                            /**
                             * Format: date-time
                             * @example 2026-11-21T10:00:00.000Z
                             */
                            createdAt: string;
                            /**
                             * Format: date-time
                             * @example 2026-11-21T10:00:00.000Z
                             */
                            updatedAt: string;
                        }[];
                    };
                };
            };
            /** @description Malformed request: an HTTP/1.1 request has no Host header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, invalid, expired or revoked credentials (send Authorization: Bearer <API key or session JWT>) */
            401: {
                headers: {
                    /** @description Always `Bearer` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description An Sms API key was sent: this endpoint takes a Full or Playground key, or a session */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The segment does not exist, or belongs to another account */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Validation failed: `errors` names every bad field (a query, path or body value; text holding U+0000 or a lone surrogate is refused everywhere) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Rate limited (RATE_LIMIT_PER_SECOND per API key, session or address); send again after Retry-After seconds */
            429: {
                headers: {
                    /** @description Seconds to wait before sending again */
                    "retry-after"?: number;
                    /** @description Requests allowed in the window */
                    "ratelimit-limit"?: number;
                    /** @description Requests left in the window (0) */
                    "ratelimit-remaining"?: number;
                    /** @description Seconds until the window resets */
                    "ratelimit-reset"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unexpected error: the response has a fixed text; the details are only in the server log */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The server is shutting down and takes no new requests: send the request again (to another node, if there is one) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    sendSms: {
        parameters: {
            query?: never;
            header?: {
                /** @description Repeat a send safely: the same key and body within 24 h answers the first response again and charges nothing; the same key with another body is a 422, and while the first request is still running, a 409 */
                "idempotency-key"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "recipients": [
                 *         "+14155550100",
                 *         "+233201234567"
                 *       ],
                 *       "content": "Your code is 123456",
                 *       "senderId": "Acme"
                 *     }
                 */
                "application/json": {
                    /** @description A number given twice is sent once; every invalid one is named in the 422 (`recipients[3]`) */
                    recipients: string[];
                    content: string;
                    /** @description 1 to 11 ASCII letters and digits, or an E.164 number: + and 7 to 15 digits, the first not 0 */
                    senderId: string;
                    /**
                     * Format: date-time
                     * @description Hand over at this time (at most a year ahead); now when absent or past
                     */
                    scheduledAt?: string;
                };
            };
        };
        responses: {
            /** @description Created */
            201: {
                headers: {
                    /** @description The path of the resource: /v1/sms/{id} */
                    location: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Format: uuid */
                        messageId: string;
                        /** @enum {string} */
                        status: "queued";
                        /** @description Recipients queued (skipped ones not counted) */
                        recipients: number;
                        /** @description Parts per recipient */
                        segments: number;
                        encoding: "GSM-7" | "UCS-2";
                        creditsUsed: number;
                        sandbox: boolean;
                        skipped: {
                            phoneNumber: string;
                            /** @enum {string} */
                            reason: "optedOut";
                        }[];
                    };
                };
            };
            /** @description Malformed request: the body is not valid JSON (or is empty under a JSON content type), Content-Length does not match it, or an HTTP/1.1 request has no Host header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, invalid, expired or revoked credentials (send Authorization: Bearer <API key or session JWT>) */
            401: {
                headers: {
                    /** @description Always `Bearer` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not enough credits: nothing was queued and nothing was charged */
            402: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description A request with this Idempotency-Key is still being processed; retry shortly */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The request body is over the size limit (BODY_LIMIT_BYTES, 1 MiB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The content type of the body is missing, malformed or not one this endpoint takes: send JSON (application/json) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Validation failed: `errors` names every bad field (`recipients[3]`, `senderId`, `scheduledAt`), or the Idempotency-Key was already used with another body */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Rate limited (RATE_LIMIT_PER_SECOND per API key, session or address); send again after Retry-After seconds */
            429: {
                headers: {
                    /** @description Seconds to wait before sending again */
                    "retry-after"?: number;
                    /** @description Requests allowed in the window */
                    "ratelimit-limit"?: number;
                    /** @description Requests left in the window (0) */
                    "ratelimit-remaining"?: number;
                    /** @description Seconds until the window resets */
                    "ratelimit-reset"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unexpected error: the response has a fixed text; the details are only in the server log */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The server is shutting down and takes no new requests: send the request again (to another node, if there is one) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    listSms: {
        parameters: {
            query?: {
                /** @description Page to return, from 1 */
                pageNumber?: number;
                /** @description Items per page, 1 to 100 */
                pageSize?: number;
                /** @description Only messages with at least one recipient in this status */
                status?: "queued" | "sent" | "delivered" | "failed";
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        items: {
                            /** Format: uuid */
                            messageId: string;
                            content: string;
                            senderId: string;
                            segments: number;
                            encoding: "GSM-7" | "UCS-2";
                            sandbox: boolean;
                            broadcastId: string | null;
                            recipientCount: number;
                            creditsUsed: number;
                            /** @description Recipients handed to the carrier */
                            sent: number;
                            delivered: number;
                            failed: number;
                            /** @description Recipients sent whose receipt never came within RECEIPT_TIMEOUT_HOURS; they count as settled */
                            receiptTimedOut: number;
                            scheduledAt: string | null;
                            /**
                             * Format: date-time
                             * @example 2026-11-21T10:00:00.000Z
                             */
                            createdAt: string;
                        }[];
                        totalCount: number;
                        pageNumber: number;
                        totalPages: number;
                        hasNextPage: boolean;
                        hasPreviousPage: boolean;
                    };
                };
            };
            /** @description Malformed request: an HTTP/1.1 request has no Host header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, invalid, expired or revoked credentials (send Authorization: Bearer <API key or session JWT>) */
            401: {
                headers: {
                    /** @description Always `Bearer` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Validation failed: `errors` names every bad field (a query, path or body value; text holding U+0000 or a lone surrogate is refused everywhere) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Rate limited (RATE_LIMIT_PER_SECOND per API key, session or address); send again after Retry-After seconds */
            429: {
                headers: {
                    /** @description Seconds to wait before sending again */
                    "retry-after"?: number;
                    /** @description Requests allowed in the window */
                    "ratelimit-limit"?: number;
                    /** @description Requests left in the window (0) */
                    "ratelimit-remaining"?: number;
                    /** @description Seconds until the window resets */
                    "ratelimit-reset"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unexpected error: the response has a fixed text; the details are only in the server log */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The server is shutting down and takes no new requests: send the request again (to another node, if there is one) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    getSms: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Resource id (UUID) */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Format: uuid */
                        messageId: string;
                        content: string;
                        senderId: string;
                        segments: number;
                        encoding: "GSM-7" | "UCS-2";
                        sandbox: boolean;
                        broadcastId: string | null;
                        recipientCount: number;
                        creditsUsed: number;
                        /** @description Recipients handed to the carrier */
                        sent: number;
                        delivered: number;
                        failed: number;
                        /** @description Recipients sent whose receipt never came within RECEIPT_TIMEOUT_HOURS; they count as settled */
                        receiptTimedOut: number;
                        scheduledAt: string | null;
                        /**
                         * Format: date-time
                         * @example 2026-11-21T10:00:00.000Z
                         */
                        createdAt: string;
                        /** @description Per-recipient status; the first 1,000 of a broadcast */
                        recipients: {
                            phoneNumber: string;
                            status: "queued" | "sent" | "delivered" | "failed";
                            carrierMessageId: string | null;
                            carrier: string | null;
                            sentAt: string | null;
                            deliveredAt: string | null;
                            failedAt: string | null;
                            error: string | null;
                            /** @description Set when no receipt came within RECEIPT_TIMEOUT_HOURS (72 by default) of sentAt: the recipient stays sent and counts as settled */
                            receiptTimedOutAt: string | null;
                            /** @description When the recipient first followed a tracked link of its broadcast (GET /l/{code}); null until then, and always for a message without tracked links */
                            clickedAt: string | null;
                        }[];
                    };
                };
            };
            /** @description Malformed request: an HTTP/1.1 request has no Host header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, invalid, expired or revoked credentials (send Authorization: Bearer <API key or session JWT>) */
            401: {
                headers: {
                    /** @description Always `Bearer` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The message does not exist, or belongs to another account */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Validation failed: `errors` names every bad field (a query, path or body value; text holding U+0000 or a lone surrogate is refused everywhere) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Rate limited (RATE_LIMIT_PER_SECOND per API key, session or address); send again after Retry-After seconds */
            429: {
                headers: {
                    /** @description Seconds to wait before sending again */
                    "retry-after"?: number;
                    /** @description Requests allowed in the window */
                    "ratelimit-limit"?: number;
                    /** @description Requests left in the window (0) */
                    "ratelimit-remaining"?: number;
                    /** @description Seconds until the window resets */
                    "ratelimit-reset"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unexpected error: the response has a fixed text; the details are only in the server log */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The server is shutting down and takes no new requests: send the request again (to another node, if there is one) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    simulateInboundSms: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "from": "+14155550100",
                 *       "to": "+14155550199",
                 *       "content": "STOP"
                 *     }
                 */
                "application/json": {
                    /** @description The sender: a valid phone number in international format (+ or 00 and the country code) */
                    from: string;
                    /** @description The number the SMS was sent to; the caller's account receives it whatever it is */
                    to: string;
                    content: string;
                };
            };
        };
        responses: {
            /** @description Received */
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Malformed request: the body is not valid JSON (or is empty under a JSON content type), Content-Length does not match it, or an HTTP/1.1 request has no Host header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, invalid, expired or revoked credentials (send Authorization: Bearer <API key or session JWT>) */
            401: {
                headers: {
                    /** @description Always `Bearer` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The request body is over the size limit (BODY_LIMIT_BYTES, 1 MiB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The content type of the body is missing, malformed or not one this endpoint takes: send JSON (application/json) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Validation failed: `errors` names every bad field (a query, path or body value; text holding U+0000 or a lone surrogate is refused everywhere) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Rate limited (RATE_LIMIT_PER_SECOND per API key, session or address); send again after Retry-After seconds */
            429: {
                headers: {
                    /** @description Seconds to wait before sending again */
                    "retry-after"?: number;
                    /** @description Requests allowed in the window */
                    "ratelimit-limit"?: number;
                    /** @description Requests left in the window (0) */
                    "ratelimit-remaining"?: number;
                    /** @description Seconds until the window resets */
                    "ratelimit-reset"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unexpected error: the response has a fixed text; the details are only in the server log */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The server is shutting down and takes no new requests: send the request again (to another node, if there is one) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    exportSms: {
        parameters: {
            query: {
                /**
                 * @description Messages created at or after this instant
                 * @example 2026-11-01T00:00:00Z
                 */
                from: string;
                /**
                 * @description Messages created before this instant; after `from`
                 * @example 2026-12-01T00:00:00Z
                 */
                to: string;
                /** @description The file format: only csv for now, which is also what an absent format means */
                format?: "csv";
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The CSV file, streamed as it is read */
            200: {
                headers: {
                    /** @description attachment, with the file name to save it under */
                    "content-disposition": string;
                    [name: string]: unknown;
                };
                content: {
                    "text/csv": string;
                };
            };
            /** @description Malformed request: an HTTP/1.1 request has no Host header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, invalid, expired or revoked credentials (send Authorization: Bearer <API key or session JWT>) */
            401: {
                headers: {
                    /** @description Always `Bearer` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Validation failed: `errors` names every bad field (a query, path or body value; text holding U+0000 or a lone surrogate is refused everywhere) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Rate limited (RATE_LIMIT_PER_SECOND per API key, session or address); send again after Retry-After seconds */
            429: {
                headers: {
                    /** @description Seconds to wait before sending again */
                    "retry-after"?: number;
                    /** @description Requests allowed in the window */
                    "ratelimit-limit"?: number;
                    /** @description Requests left in the window (0) */
                    "ratelimit-remaining"?: number;
                    /** @description Seconds until the window resets */
                    "ratelimit-reset"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unexpected error: the response has a fixed text; the details are only in the server log */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The server is shutting down and takes no new requests: send the request again (to another node, if there is one) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    previewBroadcastMessage: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "message": "Hi {{firstName|there}}, -30% today: https://shop.example.com/sale",
                 *       "trackLinks": true
                 *     }
                 */
                "application/json": {
                    message: string;
                    /** @description Render for this contact; absent: for a sample contact (Alex Sample) */
                    contactId?: string;
                    /** @default false */
                    trackLinks?: boolean;
                };
            };
        };
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @description The message as this contact receives it (tracked links with a code of the real length) */
                        text: string;
                        encoding: "GSM-7" | "UCS-2";
                        segments: number;
                    };
                };
            };
            /** @description Malformed request: the body is not valid JSON (or is empty under a JSON content type), Content-Length does not match it, or an HTTP/1.1 request has no Host header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, invalid, expired or revoked credentials (send Authorization: Bearer <API key or session JWT>) */
            401: {
                headers: {
                    /** @description Always `Bearer` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description An Sms API key was sent: this endpoint takes a Full or Playground key, or a session */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The contact does not exist, or belongs to another account */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The request body is over the size limit (BODY_LIMIT_BYTES, 1 MiB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The content type of the body is missing, malformed or not one this endpoint takes: send JSON (application/json) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Validation failed: `errors` names every bad field (a query, path or body value; text holding U+0000 or a lone surrogate is refused everywhere) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Rate limited (RATE_LIMIT_PER_SECOND per API key, session or address); send again after Retry-After seconds */
            429: {
                headers: {
                    /** @description Seconds to wait before sending again */
                    "retry-after"?: number;
                    /** @description Requests allowed in the window */
                    "ratelimit-limit"?: number;
                    /** @description Requests left in the window (0) */
                    "ratelimit-remaining"?: number;
                    /** @description Seconds until the window resets */
                    "ratelimit-reset"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unexpected error: the response has a fixed text; the details are only in the server log */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The server is shutting down and takes no new requests: send the request again (to another node, if there is one) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    listBroadcasts: {
        parameters: {
            query?: {
                /** @description Page to return, from 1 */
                pageNumber?: number;
                /** @description Items per page, 1 to 100 */
                pageSize?: number;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        items: {
                            /** Format: uuid */
                            id: string;
                            name: string;
                            message: string;
                            senderId: string;
                            contactListId: string | null;
                            segmentId: string | null;
                            /**
                             * @description draft → scheduled → sending ⇄ paused → completed (every recipient delivered or failed) or cancelled
                             * @enum {unknown}
                             */
                            status: "draft" | "scheduled" | "sending" | "paused" | "completed" | "cancelled";
                            /** @description Contacts the send reached (opted-out ones left out); 0 until it starts */
                            recipients: number;
                            /** @description The sum over recipients of their text's segments × their route's price; 0 in the sandbox */
                            creditsUsed: number;
                            /** @description Recipients handed to the carrier */
                            sent: number;
                            delivered: number;
                            failed: number;
                            /** @description Recipients sent whose receipt never came within RECEIPT_TIMEOUT_HOURS; the broadcast completes once every recipient is delivered, failed or settled so */
                            receiptTimedOut: number;
                            /** @description Parts of the message as written; a personalised message has each recipient counted on its own text */
                            segments: number;
                            encoding: "GSM-7" | "UCS-2";
                            trackLinks: boolean;
                            maxPerMinute: number | null;
                            sendWindow: {
                                /**
                                 * @description HH:MM, 24-hour clock
                                 * @example 09:00
                                 */
                                start: string;
                                /**
                                 * @description HH:MM, 24-hour clock
                                 * @example 20:00
                                 */
                                end: string;
                                /**
                                 * @description IANA time zone of the window; a contact's own `timeZone` attribute, when it is a valid IANA name, takes its place for that contact
                                 * @example Europe/Paris
                                 */
                                timeZone: string;
                            } | null;
                            /** @description Recipients queued until their send window opens */
                            waitingForWindow: number;
                            /** @description Every follow of a tracked link */
                            clicks: number;
                            /** @description Recipients who followed a tracked link at least once */
                            uniqueClicks: number;
                            pausedAt: string | null;
                            cancelledAt: string | null;
                            /** @description Sent by a Playground key: nothing leaves the platform, nothing is charged */
                            sandbox: boolean;
                            scheduledAt: string | null;
                            /**
                             * Format: date-time
                             * @example 2026-11-21T10:00:00.000Z
                             */
                            createdAt: string;
                            sentAt: string | null;
                            completedAt: string | null;
                            failure: string | null;
                        }[];
                        totalCount: number;
                        pageNumber: number;
                        totalPages: number;
                        hasNextPage: boolean;
                        hasPreviousPage: boolean;
                    };
                };
            };
            /** @description Malformed request: an HTTP/1.1 request has no Host header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, invalid, expired or revoked credentials (send Authorization: Bearer <API key or session JWT>) */
            401: {
                headers: {
                    /** @description Always `Bearer` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description An Sms API key was sent: this endpoint takes a Full or Playground key, or a session */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Validation failed: `errors` names every bad field (a query, path or body value; text holding U+0000 or a lone surrogate is refused everywhere) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Rate limited (RATE_LIMIT_PER_SECOND per API key, session or address); send again after Retry-After seconds */
            429: {
                headers: {
                    /** @description Seconds to wait before sending again */
                    "retry-after"?: number;
                    /** @description Requests allowed in the window */
                    "ratelimit-limit"?: number;
                    /** @description Requests left in the window (0) */
                    "ratelimit-remaining"?: number;
                    /** @description Seconds until the window resets */
                    "ratelimit-reset"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unexpected error: the response has a fixed text; the details are only in the server log */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The server is shutting down and takes no new requests: send the request again (to another node, if there is one) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    createBroadcast: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** @description Exactly one of contactListId or segmentId. The message may greet each contact: {{firstName}}, {{lastName}}, {{phoneNumber}} and {{attributes.KEY}}, each with an optional fallback after a bar ({{firstName|there}}); a missing value renders the fallback or nothing, and anything else between {{ and }} is refused (422, naming the position). */
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "name": "Black Friday",
                 *       "message": "Everything -30% today only. Reply STOP to opt out",
                 *       "senderId": "Acme",
                 *       "segmentId": "0193a5b0-7c1e-7b7a-9a55-3f1d2c4b5a69"
                 *     }
                 */
                "application/json": {
                    /**
                     * @description Must not be blank (spaces alone are refused)
                     * @example Black Friday
                     */
                    name: string;
                    message: string;
                    /** @description 1 to 11 ASCII letters and digits, or an E.164 number: + and 7 to 15 digits, the first not 0 */
                    senderId: string;
                    contactListId?: string | null;
                    segmentId?: string | null;
                    /**
                     * @description Every http(s) URL in the message becomes a short link of PUBLIC_URL, one per recipient, whose clicks are counted
                     * @default false
                     */
                    trackLinks?: boolean;
                    maxPerMinute?: number | null;
                    sendWindow?: {
                        /**
                         * @description HH:MM, 24-hour clock
                         * @example 09:00
                         */
                        start: string;
                        /**
                         * @description HH:MM, 24-hour clock
                         * @example 20:00
                         */
                        end: string;
                        /**
                         * @description IANA time zone of the window; a contact's own `timeZone` attribute, when it is a valid IANA name, takes its place for that contact
                         * @example Europe/Paris
                         */
                        timeZone: string;
                    } | null;
                };
            };
        };
        responses: {
            /** @description The id of the new resource */
            201: {
                headers: {
                    /** @description The path of the resource: /v1/broadcasts/{id} */
                    location: string;
                    [name: string]: unknown;
                };
                content: {
                    /** @example 0193a5b0-7c1e-7b7a-9a55-3f1d2c4b5a69 */
                    "application/json": string;
                };
            };
            /** @description Malformed request: the body is not valid JSON (or is empty under a JSON content type), Content-Length does not match it, or an HTTP/1.1 request has no Host header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, invalid, expired or revoked credentials (send Authorization: Bearer <API key or session JWT>) */
            401: {
                headers: {
                    /** @description Always `Bearer` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description An Sms API key was sent: this endpoint takes a Full or Playground key, or a session */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The contact list or segment does not exist, or belongs to another account */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The request body is over the size limit (BODY_LIMIT_BYTES, 1 MiB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The content type of the body is missing, malformed or not one this endpoint takes: send JSON (application/json) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Validation failed: `errors` names every bad field (a query, path or body value; text holding U+0000 or a lone surrogate is refused everywhere) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Rate limited (RATE_LIMIT_PER_SECOND per API key, session or address); send again after Retry-After seconds */
            429: {
                headers: {
                    /** @description Seconds to wait before sending again */
                    "retry-after"?: number;
                    /** @description Requests allowed in the window */
                    "ratelimit-limit"?: number;
                    /** @description Requests left in the window (0) */
                    "ratelimit-remaining"?: number;
                    /** @description Seconds until the window resets */
                    "ratelimit-reset"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unexpected error: the response has a fixed text; the details are only in the server log */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The server is shutting down and takes no new requests: send the request again (to another node, if there is one) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    getBroadcast: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Resource id (UUID) */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Format: uuid */
                        id: string;
                        name: string;
                        message: string;
                        senderId: string;
                        contactListId: string | null;
                        segmentId: string | null;
                        /**
                         * @description draft → scheduled → sending ⇄ paused → completed (every recipient delivered or failed) or cancelled
                         * @enum {unknown}
                         */
                        status: "draft" | "scheduled" | "sending" | "paused" | "completed" | "cancelled";
                        /** @description Contacts the send reached (opted-out ones left out); 0 until it starts */
                        recipients: number;
                        /** @description The sum over recipients of their text's segments × their route's price; 0 in the sandbox */
                        creditsUsed: number;
                        /** @description Recipients handed to the carrier */
                        sent: number;
                        delivered: number;
                        failed: number;
                        /** @description Recipients sent whose receipt never came within RECEIPT_TIMEOUT_HOURS; the broadcast completes once every recipient is delivered, failed or settled so */
                        receiptTimedOut: number;
                        /** @description Parts of the message as written; a personalised message has each recipient counted on its own text */
                        segments: number;
                        encoding: "GSM-7" | "UCS-2";
                        trackLinks: boolean;
                        maxPerMinute: number | null;
                        sendWindow: {
                            /**
                             * @description HH:MM, 24-hour clock
                             * @example 09:00
                             */
                            start: string;
                            /**
                             * @description HH:MM, 24-hour clock
                             * @example 20:00
                             */
                            end: string;
                            /**
                             * @description IANA time zone of the window; a contact's own `timeZone` attribute, when it is a valid IANA name, takes its place for that contact
                             * @example Europe/Paris
                             */
                            timeZone: string;
                        } | null;
                        /** @description Recipients queued until their send window opens */
                        waitingForWindow: number;
                        /** @description Every follow of a tracked link */
                        clicks: number;
                        /** @description Recipients who followed a tracked link at least once */
                        uniqueClicks: number;
                        pausedAt: string | null;
                        cancelledAt: string | null;
                        /** @description Sent by a Playground key: nothing leaves the platform, nothing is charged */
                        sandbox: boolean;
                        scheduledAt: string | null;
                        /**
                         * Format: date-time
                         * @example 2026-11-21T10:00:00.000Z
                         */
                        createdAt: string;
                        sentAt: string | null;
                        completedAt: string | null;
                        failure: string | null;
                    };
                };
            };
            /** @description Malformed request: an HTTP/1.1 request has no Host header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, invalid, expired or revoked credentials (send Authorization: Bearer <API key or session JWT>) */
            401: {
                headers: {
                    /** @description Always `Bearer` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description An Sms API key was sent: this endpoint takes a Full or Playground key, or a session */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The broadcast does not exist, or belongs to another account */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Validation failed: `errors` names every bad field (a query, path or body value; text holding U+0000 or a lone surrogate is refused everywhere) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Rate limited (RATE_LIMIT_PER_SECOND per API key, session or address); send again after Retry-After seconds */
            429: {
                headers: {
                    /** @description Seconds to wait before sending again */
                    "retry-after"?: number;
                    /** @description Requests allowed in the window */
                    "ratelimit-limit"?: number;
                    /** @description Requests left in the window (0) */
                    "ratelimit-remaining"?: number;
                    /** @description Seconds until the window resets */
                    "ratelimit-reset"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unexpected error: the response has a fixed text; the details are only in the server log */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The server is shutting down and takes no new requests: send the request again (to another node, if there is one) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    replaceBroadcast: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Resource id (UUID) */
                id: string;
            };
            cookie?: never;
        };
        /** @description Exactly one of contactListId or segmentId. The message may greet each contact: {{firstName}}, {{lastName}}, {{phoneNumber}} and {{attributes.KEY}}, each with an optional fallback after a bar ({{firstName|there}}); a missing value renders the fallback or nothing, and anything else between {{ and }} is refused (422, naming the position). */
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "name": "Black Friday",
                 *       "message": "Everything -30% today only. Reply STOP to opt out",
                 *       "senderId": "Acme",
                 *       "segmentId": "0193a5b0-7c1e-7b7a-9a55-3f1d2c4b5a69"
                 *     }
                 */
                "application/json": {
                    /**
                     * @description Must not be blank (spaces alone are refused)
                     * @example Black Friday
                     */
                    name: string;
                    message: string;
                    /** @description 1 to 11 ASCII letters and digits, or an E.164 number: + and 7 to 15 digits, the first not 0 */
                    senderId: string;
                    contactListId?: string | null;
                    segmentId?: string | null;
                    /**
                     * @description Every http(s) URL in the message becomes a short link of PUBLIC_URL, one per recipient, whose clicks are counted
                     * @default false
                     */
                    trackLinks?: boolean;
                    maxPerMinute?: number | null;
                    sendWindow?: {
                        /**
                         * @description HH:MM, 24-hour clock
                         * @example 09:00
                         */
                        start: string;
                        /**
                         * @description HH:MM, 24-hour clock
                         * @example 20:00
                         */
                        end: string;
                        /**
                         * @description IANA time zone of the window; a contact's own `timeZone` attribute, when it is a valid IANA name, takes its place for that contact
                         * @example Europe/Paris
                         */
                        timeZone: string;
                    } | null;
                };
            };
        };
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Format: uuid */
                        id: string;
                        name: string;
                        message: string;
                        senderId: string;
                        contactListId: string | null;
                        segmentId: string | null;
                        /**
                         * @description draft → scheduled → sending ⇄ paused → completed (every recipient delivered or failed) or cancelled
                         * @enum {unknown}
                         */
                        status: "draft" | "scheduled" | "sending" | "paused" | "completed" | "cancelled";
                        /** @description Contacts the send reached (opted-out ones left out); 0 until it starts */
                        recipients: number;
                        /** @description The sum over recipients of their text's segments × their route's price; 0 in the sandbox */
                        creditsUsed: number;
                        /** @description Recipients handed to the carrier */
                        sent: number;
                        delivered: number;
                        failed: number;
                        /** @description Recipients sent whose receipt never came within RECEIPT_TIMEOUT_HOURS; the broadcast completes once every recipient is delivered, failed or settled so */
                        receiptTimedOut: number;
                        /** @description Parts of the message as written; a personalised message has each recipient counted on its own text */
                        segments: number;
                        encoding: "GSM-7" | "UCS-2";
                        trackLinks: boolean;
                        maxPerMinute: number | null;
                        sendWindow: {
                            /**
                             * @description HH:MM, 24-hour clock
                             * @example 09:00
                             */
                            start: string;
                            /**
                             * @description HH:MM, 24-hour clock
                             * @example 20:00
                             */
                            end: string;
                            /**
                             * @description IANA time zone of the window; a contact's own `timeZone` attribute, when it is a valid IANA name, takes its place for that contact
                             * @example Europe/Paris
                             */
                            timeZone: string;
                        } | null;
                        /** @description Recipients queued until their send window opens */
                        waitingForWindow: number;
                        /** @description Every follow of a tracked link */
                        clicks: number;
                        /** @description Recipients who followed a tracked link at least once */
                        uniqueClicks: number;
                        pausedAt: string | null;
                        cancelledAt: string | null;
                        /** @description Sent by a Playground key: nothing leaves the platform, nothing is charged */
                        sandbox: boolean;
                        scheduledAt: string | null;
                        /**
                         * Format: date-time
                         * @example 2026-11-21T10:00:00.000Z
                         */
                        createdAt: string;
                        sentAt: string | null;
                        completedAt: string | null;
                        failure: string | null;
                    };
                };
            };
            /** @description Malformed request: the body is not valid JSON (or is empty under a JSON content type), Content-Length does not match it, or an HTTP/1.1 request has no Host header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, invalid, expired or revoked credentials (send Authorization: Bearer <API key or session JWT>) */
            401: {
                headers: {
                    /** @description Always `Bearer` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description An Sms API key was sent: this endpoint takes a Full or Playground key, or a session */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The broadcast, or the contact list or segment it names, does not exist or belongs to another account */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The broadcast is not a draft any more */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The request body is over the size limit (BODY_LIMIT_BYTES, 1 MiB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The content type of the body is missing, malformed or not one this endpoint takes: send JSON (application/json) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Validation failed: `errors` names every bad field (a query, path or body value; text holding U+0000 or a lone surrogate is refused everywhere) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Rate limited (RATE_LIMIT_PER_SECOND per API key, session or address); send again after Retry-After seconds */
            429: {
                headers: {
                    /** @description Seconds to wait before sending again */
                    "retry-after"?: number;
                    /** @description Requests allowed in the window */
                    "ratelimit-limit"?: number;
                    /** @description Requests left in the window (0) */
                    "ratelimit-remaining"?: number;
                    /** @description Seconds until the window resets */
                    "ratelimit-reset"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unexpected error: the response has a fixed text; the details are only in the server log */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The server is shutting down and takes no new requests: send the request again (to another node, if there is one) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    deleteBroadcast: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Resource id (UUID) */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Done */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Malformed request: the body is not valid JSON (or is empty under a JSON content type), Content-Length does not match it, or an HTTP/1.1 request has no Host header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, invalid, expired or revoked credentials (send Authorization: Bearer <API key or session JWT>) */
            401: {
                headers: {
                    /** @description Always `Bearer` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description An Sms API key was sent: this endpoint takes a Full or Playground key, or a session */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The broadcast does not exist, or belongs to another account */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The broadcast is sending or paused */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The request body is over the size limit (BODY_LIMIT_BYTES, 1 MiB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The content type of the body is missing, malformed or not one this endpoint takes: send JSON (application/json) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Validation failed: `errors` names every bad field (a query, path or body value; text holding U+0000 or a lone surrogate is refused everywhere) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Rate limited (RATE_LIMIT_PER_SECOND per API key, session or address); send again after Retry-After seconds */
            429: {
                headers: {
                    /** @description Seconds to wait before sending again */
                    "retry-after"?: number;
                    /** @description Requests allowed in the window */
                    "ratelimit-limit"?: number;
                    /** @description Requests left in the window (0) */
                    "ratelimit-remaining"?: number;
                    /** @description Seconds until the window resets */
                    "ratelimit-reset"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unexpected error: the response has a fixed text; the details are only in the server log */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The server is shutting down and takes no new requests: send the request again (to another node, if there is one) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    sendBroadcast: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Resource id (UUID) */
                id: string;
            };
            cookie?: never;
        };
        /** @description Optional: a send without a body starts now */
        requestBody?: {
            content: {
                /**
                 * @example {
                 *       "scheduledAt": "2026-11-27T08:00:00.000Z"
                 *     }
                 */
                "application/json": {
                    /**
                     * Format: date-time
                     * @description Start at this time (at most a year ahead); now when absent or past
                     */
                    scheduledAt?: string;
                };
            };
        };
        responses: {
            /** @description Accepted */
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /**
                         * @description completed at once when nobody is left to send to
                         * @enum {unknown}
                         */
                        status: "sending" | "scheduled" | "completed";
                        /** @description 0 for a scheduled send until it starts */
                        recipients: number;
                        creditsUsed: number;
                    };
                };
            };
            /** @description Malformed request: the body is not valid JSON (or is empty under a JSON content type), Content-Length does not match it, or an HTTP/1.1 request has no Host header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, invalid, expired or revoked credentials (send Authorization: Bearer <API key or session JWT>) */
            401: {
                headers: {
                    /** @description Always `Bearer` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not enough credits for every recipient's segments × price: the broadcast stays a draft and nothing is charged */
            402: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description An Sms API key was sent: this endpoint takes a Full or Playground key, or a session */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The broadcast does not exist, or belongs to another account */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The broadcast is not a draft (it was sent or scheduled already), or its contact list or segment no longer exists */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The request body is over the size limit (BODY_LIMIT_BYTES, 1 MiB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The content type of the body is missing, malformed or not one this endpoint takes: send JSON (application/json) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Validation failed: `errors` names every bad field (a query, path or body value; text holding U+0000 or a lone surrogate is refused everywhere) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Rate limited (RATE_LIMIT_PER_SECOND per API key, session or address); send again after Retry-After seconds */
            429: {
                headers: {
                    /** @description Seconds to wait before sending again */
                    "retry-after"?: number;
                    /** @description Requests allowed in the window */
                    "ratelimit-limit"?: number;
                    /** @description Requests left in the window (0) */
                    "ratelimit-remaining"?: number;
                    /** @description Seconds until the window resets */
                    "ratelimit-reset"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unexpected error: the response has a fixed text; the details are only in the server log */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The server is shutting down and takes no new requests: send the request again (to another node, if there is one) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    estimateBroadcast: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Resource id (UUID) */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @description Contacts the broadcast would reach now (opted-out ones left out) */
                        recipients: number;
                        /** @description What a send now would take: each recipient's segments × route price, summed; 0 when asked with a Playground key */
                        credits: number;
                    };
                };
            };
            /** @description Malformed request: an HTTP/1.1 request has no Host header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, invalid, expired or revoked credentials (send Authorization: Bearer <API key or session JWT>) */
            401: {
                headers: {
                    /** @description Always `Bearer` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description An Sms API key was sent: this endpoint takes a Full or Playground key, or a session */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The broadcast does not exist, or belongs to another account */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Its contact list or segment no longer exists */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Validation failed: `errors` names every bad field (a query, path or body value; text holding U+0000 or a lone surrogate is refused everywhere) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Rate limited (RATE_LIMIT_PER_SECOND per API key, session or address); send again after Retry-After seconds */
            429: {
                headers: {
                    /** @description Seconds to wait before sending again */
                    "retry-after"?: number;
                    /** @description Requests allowed in the window */
                    "ratelimit-limit"?: number;
                    /** @description Requests left in the window (0) */
                    "ratelimit-remaining"?: number;
                    /** @description Seconds until the window resets */
                    "ratelimit-reset"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unexpected error: the response has a fixed text; the details are only in the server log */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The server is shutting down and takes no new requests: send the request again (to another node, if there is one) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    pauseBroadcast: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Resource id (UUID) */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Format: uuid */
                        id: string;
                        name: string;
                        message: string;
                        senderId: string;
                        contactListId: string | null;
                        segmentId: string | null;
                        /**
                         * @description draft → scheduled → sending ⇄ paused → completed (every recipient delivered or failed) or cancelled
                         * @enum {unknown}
                         */
                        status: "draft" | "scheduled" | "sending" | "paused" | "completed" | "cancelled";
                        /** @description Contacts the send reached (opted-out ones left out); 0 until it starts */
                        recipients: number;
                        /** @description The sum over recipients of their text's segments × their route's price; 0 in the sandbox */
                        creditsUsed: number;
                        /** @description Recipients handed to the carrier */
                        sent: number;
                        delivered: number;
                        failed: number;
                        /** @description Recipients sent whose receipt never came within RECEIPT_TIMEOUT_HOURS; the broadcast completes once every recipient is delivered, failed or settled so */
                        receiptTimedOut: number;
                        /** @description Parts of the message as written; a personalised message has each recipient counted on its own text */
                        segments: number;
                        encoding: "GSM-7" | "UCS-2";
                        trackLinks: boolean;
                        maxPerMinute: number | null;
                        sendWindow: {
                            /**
                             * @description HH:MM, 24-hour clock
                             * @example 09:00
                             */
                            start: string;
                            /**
                             * @description HH:MM, 24-hour clock
                             * @example 20:00
                             */
                            end: string;
                            /**
                             * @description IANA time zone of the window; a contact's own `timeZone` attribute, when it is a valid IANA name, takes its place for that contact
                             * @example Europe/Paris
                             */
                            timeZone: string;
                        } | null;
                        /** @description Recipients queued until their send window opens */
                        waitingForWindow: number;
                        /** @description Every follow of a tracked link */
                        clicks: number;
                        /** @description Recipients who followed a tracked link at least once */
                        uniqueClicks: number;
                        pausedAt: string | null;
                        cancelledAt: string | null;
                        /** @description Sent by a Playground key: nothing leaves the platform, nothing is charged */
                        sandbox: boolean;
                        scheduledAt: string | null;
                        /**
                         * Format: date-time
                         * @example 2026-11-21T10:00:00.000Z
                         */
                        createdAt: string;
                        sentAt: string | null;
                        completedAt: string | null;
                        failure: string | null;
                    };
                };
            };
            /** @description Malformed request: the body is not valid JSON (or is empty under a JSON content type), Content-Length does not match it, or an HTTP/1.1 request has no Host header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, invalid, expired or revoked credentials (send Authorization: Bearer <API key or session JWT>) */
            401: {
                headers: {
                    /** @description Always `Bearer` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description An Sms API key was sent: this endpoint takes a Full or Playground key, or a session */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The broadcast does not exist, or belongs to another account */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The broadcast is not sending */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The request body is over the size limit (BODY_LIMIT_BYTES, 1 MiB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The content type of the body is missing, malformed or not one this endpoint takes: send JSON (application/json) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Validation failed: `errors` names every bad field (a query, path or body value; text holding U+0000 or a lone surrogate is refused everywhere) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Rate limited (RATE_LIMIT_PER_SECOND per API key, session or address); send again after Retry-After seconds */
            429: {
                headers: {
                    /** @description Seconds to wait before sending again */
                    "retry-after"?: number;
                    /** @description Requests allowed in the window */
                    "ratelimit-limit"?: number;
                    /** @description Requests left in the window (0) */
                    "ratelimit-remaining"?: number;
                    /** @description Seconds until the window resets */
                    "ratelimit-reset"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unexpected error: the response has a fixed text; the details are only in the server log */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The server is shutting down and takes no new requests: send the request again (to another node, if there is one) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    resumeBroadcast: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Resource id (UUID) */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Format: uuid */
                        id: string;
                        name: string;
                        message: string;
                        senderId: string;
                        contactListId: string | null;
                        segmentId: string | null;
                        /**
                         * @description draft → scheduled → sending ⇄ paused → completed (every recipient delivered or failed) or cancelled
                         * @enum {unknown}
                         */
                        status: "draft" | "scheduled" | "sending" | "paused" | "completed" | "cancelled";
                        /** @description Contacts the send reached (opted-out ones left out); 0 until it starts */
                        recipients: number;
                        /** @description The sum over recipients of their text's segments × their route's price; 0 in the sandbox */
                        creditsUsed: number;
                        /** @description Recipients handed to the carrier */
                        sent: number;
                        delivered: number;
                        failed: number;
                        /** @description Recipients sent whose receipt never came within RECEIPT_TIMEOUT_HOURS; the broadcast completes once every recipient is delivered, failed or settled so */
                        receiptTimedOut: number;
                        /** @description Parts of the message as written; a personalised message has each recipient counted on its own text */
                        segments: number;
                        encoding: "GSM-7" | "UCS-2";
                        trackLinks: boolean;
                        maxPerMinute: number | null;
                        sendWindow: {
                            /**
                             * @description HH:MM, 24-hour clock
                             * @example 09:00
                             */
                            start: string;
                            /**
                             * @description HH:MM, 24-hour clock
                             * @example 20:00
                             */
                            end: string;
                            /**
                             * @description IANA time zone of the window; a contact's own `timeZone` attribute, when it is a valid IANA name, takes its place for that contact
                             * @example Europe/Paris
                             */
                            timeZone: string;
                        } | null;
                        /** @description Recipients queued until their send window opens */
                        waitingForWindow: number;
                        /** @description Every follow of a tracked link */
                        clicks: number;
                        /** @description Recipients who followed a tracked link at least once */
                        uniqueClicks: number;
                        pausedAt: string | null;
                        cancelledAt: string | null;
                        /** @description Sent by a Playground key: nothing leaves the platform, nothing is charged */
                        sandbox: boolean;
                        scheduledAt: string | null;
                        /**
                         * Format: date-time
                         * @example 2026-11-21T10:00:00.000Z
                         */
                        createdAt: string;
                        sentAt: string | null;
                        completedAt: string | null;
                        failure: string | null;
                    };
                };
            };
            /** @description Malformed request: the body is not valid JSON (or is empty under a JSON content type), Content-Length does not match it, or an HTTP/1.1 request has no Host header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, invalid, expired or revoked credentials (send Authorization: Bearer <API key or session JWT>) */
            401: {
                headers: {
                    /** @description Always `Bearer` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description An Sms API key was sent: this endpoint takes a Full or Playground key, or a session */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The broadcast does not exist, or belongs to another account */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The broadcast is not paused */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The request body is over the size limit (BODY_LIMIT_BYTES, 1 MiB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The content type of the body is missing, malformed or not one this endpoint takes: send JSON (application/json) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Validation failed: `errors` names every bad field (a query, path or body value; text holding U+0000 or a lone surrogate is refused everywhere) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Rate limited (RATE_LIMIT_PER_SECOND per API key, session or address); send again after Retry-After seconds */
            429: {
                headers: {
                    /** @description Seconds to wait before sending again */
                    "retry-after"?: number;
                    /** @description Requests allowed in the window */
                    "ratelimit-limit"?: number;
                    /** @description Requests left in the window (0) */
                    "ratelimit-remaining"?: number;
                    /** @description Seconds until the window resets */
                    "ratelimit-reset"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unexpected error: the response has a fixed text; the details are only in the server log */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The server is shutting down and takes no new requests: send the request again (to another node, if there is one) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    cancelBroadcast: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Resource id (UUID) */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Format: uuid */
                        id: string;
                        name: string;
                        message: string;
                        senderId: string;
                        contactListId: string | null;
                        segmentId: string | null;
                        /**
                         * @description draft → scheduled → sending ⇄ paused → completed (every recipient delivered or failed) or cancelled
                         * @enum {unknown}
                         */
                        status: "draft" | "scheduled" | "sending" | "paused" | "completed" | "cancelled";
                        /** @description Contacts the send reached (opted-out ones left out); 0 until it starts */
                        recipients: number;
                        /** @description The sum over recipients of their text's segments × their route's price; 0 in the sandbox */
                        creditsUsed: number;
                        /** @description Recipients handed to the carrier */
                        sent: number;
                        delivered: number;
                        failed: number;
                        /** @description Recipients sent whose receipt never came within RECEIPT_TIMEOUT_HOURS; the broadcast completes once every recipient is delivered, failed or settled so */
                        receiptTimedOut: number;
                        /** @description Parts of the message as written; a personalised message has each recipient counted on its own text */
                        segments: number;
                        encoding: "GSM-7" | "UCS-2";
                        trackLinks: boolean;
                        maxPerMinute: number | null;
                        sendWindow: {
                            /**
                             * @description HH:MM, 24-hour clock
                             * @example 09:00
                             */
                            start: string;
                            /**
                             * @description HH:MM, 24-hour clock
                             * @example 20:00
                             */
                            end: string;
                            /**
                             * @description IANA time zone of the window; a contact's own `timeZone` attribute, when it is a valid IANA name, takes its place for that contact
                             * @example Europe/Paris
                             */
                            timeZone: string;
                        } | null;
                        /** @description Recipients queued until their send window opens */
                        waitingForWindow: number;
                        /** @description Every follow of a tracked link */
                        clicks: number;
                        /** @description Recipients who followed a tracked link at least once */
                        uniqueClicks: number;
                        pausedAt: string | null;
                        cancelledAt: string | null;
                        /** @description Sent by a Playground key: nothing leaves the platform, nothing is charged */
                        sandbox: boolean;
                        scheduledAt: string | null;
                        /**
                         * Format: date-time
                         * @example 2026-11-21T10:00:00.000Z
                         */
                        createdAt: string;
                        sentAt: string | null;
                        completedAt: string | null;
                        failure: string | null;
                    };
                };
            };
            /** @description Malformed request: the body is not valid JSON (or is empty under a JSON content type), Content-Length does not match it, or an HTTP/1.1 request has no Host header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, invalid, expired or revoked credentials (send Authorization: Bearer <API key or session JWT>) */
            401: {
                headers: {
                    /** @description Always `Bearer` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description An Sms API key was sent: this endpoint takes a Full or Playground key, or a session */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The broadcast does not exist, or belongs to another account */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The broadcast is not scheduled, sending or paused */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The request body is over the size limit (BODY_LIMIT_BYTES, 1 MiB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The content type of the body is missing, malformed or not one this endpoint takes: send JSON (application/json) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Validation failed: `errors` names every bad field (a query, path or body value; text holding U+0000 or a lone surrogate is refused everywhere) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Rate limited (RATE_LIMIT_PER_SECOND per API key, session or address); send again after Retry-After seconds */
            429: {
                headers: {
                    /** @description Seconds to wait before sending again */
                    "retry-after"?: number;
                    /** @description Requests allowed in the window */
                    "ratelimit-limit"?: number;
                    /** @description Requests left in the window (0) */
                    "ratelimit-remaining"?: number;
                    /** @description Seconds until the window resets */
                    "ratelimit-reset"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unexpected error: the response has a fixed text; the details are only in the server log */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The server is shutting down and takes no new requests: send the request again (to another node, if there is one) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    testSendBroadcast: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Resource id (UUID) */
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "phoneNumbers": [
                 *         "+14155550123"
                 *       ]
                 *     }
                 */
                "application/json": {
                    phoneNumbers: string[];
                    /** @description Render for this contact; absent: for the first contact of the audience */
                    contactId?: string;
                };
            };
        };
        responses: {
            /** @description Created */
            201: {
                headers: {
                    /** @description The path of the resource: /v1/sms/{id} */
                    location: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Format: uuid */
                        messageId: string;
                        /** @enum {string} */
                        status: "queued";
                        /** @description Recipients queued (skipped ones not counted) */
                        recipients: number;
                        /** @description Parts per recipient */
                        segments: number;
                        encoding: "GSM-7" | "UCS-2";
                        creditsUsed: number;
                        sandbox: boolean;
                        skipped: {
                            phoneNumber: string;
                            /** @enum {string} */
                            reason: "optedOut";
                        }[];
                    };
                };
            };
            /** @description Malformed request: the body is not valid JSON (or is empty under a JSON content type), Content-Length does not match it, or an HTTP/1.1 request has no Host header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, invalid, expired or revoked credentials (send Authorization: Bearer <API key or session JWT>) */
            401: {
                headers: {
                    /** @description Always `Bearer` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not enough credits: nothing was sent */
            402: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description An Sms API key was sent: this endpoint takes a Full or Playground key, or a session */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The broadcast or the contact does not exist, or belongs to another account */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The request body is over the size limit (BODY_LIMIT_BYTES, 1 MiB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The content type of the body is missing, malformed or not one this endpoint takes: send JSON (application/json) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Validation failed: `errors` names every bad field (a query, path or body value; text holding U+0000 or a lone surrogate is refused everywhere) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Rate limited (RATE_LIMIT_PER_SECOND per API key, session or address); send again after Retry-After seconds */
            429: {
                headers: {
                    /** @description Seconds to wait before sending again */
                    "retry-after"?: number;
                    /** @description Requests allowed in the window */
                    "ratelimit-limit"?: number;
                    /** @description Requests left in the window (0) */
                    "ratelimit-remaining"?: number;
                    /** @description Seconds until the window resets */
                    "ratelimit-reset"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unexpected error: the response has a fixed text; the details are only in the server log */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The server is shutting down and takes no new requests: send the request again (to another node, if there is one) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    getMessageStats: {
        parameters: {
            query: {
                /**
                 * @description Start of the range (inclusive), with a UTC offset
                 * @example 2026-11-01T00:00:00Z
                 */
                from: string;
                /**
                 * @description End of the range (exclusive); after `from`
                 * @example 2026-11-08T00:00:00Z
                 */
                to: string;
                /** @description An hour or a day of `timeZone` */
                interval: "hour" | "day";
                /** @description The IANA time zone whose hours and days the series follows (daylight saving time included: a day is then 23 or 25 hours long) */
                timeZone?: string;
                /** @description Only this broadcast's recipients and credits */
                broadcastId?: string;
                /** @description Only what this carrier connection did, by name (as `carrier` on a recipient): sent, delivered, and failures it answered; queued and credits are then 0, as they come before a carrier */
                carrier?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @description An hour or a day of `timeZone` */
                        interval: "hour" | "day";
                        timeZone: string;
                        /** @description Every interval from the one holding `from` to the last that starts before `to`, zeros included; each counts all of its time */
                        series: {
                            /**
                             * Format: date-time
                             * @description The UTC instant the interval starts at: the zone's full hour or midnight
                             * @example 2026-11-21T10:00:00.000Z
                             */
                            start: string;
                            /** @description Recipients queued: a single send's when it was requested, a broadcast's as they were written (those not yet written when it was cancelled are not) */
                            queued: number;
                            /** @description Recipients handed to a carrier */
                            sent: number;
                            /** @description Recipients whose every part a carrier reported delivered */
                            delivered: number;
                            /** @description Recipients failed: refused at hand-off, by a receipt, cancelled, or opted out before the hand-off */
                            failed: number;
                            /** @description Credits debited minus credits refunded; negative when more was refunded than debited */
                            credits: number;
                        }[];
                    };
                };
            };
            /** @description Malformed request: an HTTP/1.1 request has no Host header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, invalid, expired or revoked credentials (send Authorization: Bearer <API key or session JWT>) */
            401: {
                headers: {
                    /** @description Always `Bearer` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The broadcast does not exist, or belongs to another account */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Validation failed: `to` is not after `from`, the range holds more than 2,000 intervals, or `timeZone` is not an IANA time zone */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Rate limited (RATE_LIMIT_PER_SECOND per API key, session or address); send again after Retry-After seconds */
            429: {
                headers: {
                    /** @description Seconds to wait before sending again */
                    "retry-after"?: number;
                    /** @description Requests allowed in the window */
                    "ratelimit-limit"?: number;
                    /** @description Requests left in the window (0) */
                    "ratelimit-remaining"?: number;
                    /** @description Seconds until the window resets */
                    "ratelimit-reset"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unexpected error: the response has a fixed text; the details are only in the server log */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The server is shutting down and takes no new requests: send the request again (to another node, if there is one) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    getErrorStats: {
        parameters: {
            query: {
                /**
                 * @description Start of the range (inclusive), with a UTC offset
                 * @example 2026-11-01T00:00:00Z
                 */
                from: string;
                /**
                 * @description End of the range (exclusive); after `from`
                 * @example 2026-11-08T00:00:00Z
                 */
                to: string;
                /** @description Errors to list, 1 to 100 */
                limit?: number;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @description Most frequent first */
                        items: {
                            /** @description Why the recipients failed, as on the recipient (its first 200 characters) */
                            error: string;
                            /** @description Recipients that failed so */
                            count: number;
                            /** @description The phone number of the latest of them */
                            exampleRecipient: string;
                            /**
                             * Format: date-time
                             * @description When the latest of them failed
                             * @example 2026-11-21T10:00:00.000Z
                             */
                            lastAt: string;
                        }[];
                    };
                };
            };
            /** @description Malformed request: an HTTP/1.1 request has no Host header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, invalid, expired or revoked credentials (send Authorization: Bearer <API key or session JWT>) */
            401: {
                headers: {
                    /** @description Always `Bearer` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Validation failed: `to` is not after `from` */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Rate limited (RATE_LIMIT_PER_SECOND per API key, session or address); send again after Retry-After seconds */
            429: {
                headers: {
                    /** @description Seconds to wait before sending again */
                    "retry-after"?: number;
                    /** @description Requests allowed in the window */
                    "ratelimit-limit"?: number;
                    /** @description Requests left in the window (0) */
                    "ratelimit-remaining"?: number;
                    /** @description Seconds until the window resets */
                    "ratelimit-reset"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unexpected error: the response has a fixed text; the details are only in the server log */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The server is shutting down and takes no new requests: send the request again (to another node, if there is one) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    followLink: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /**
                 * @description The recipient’s link code (14 lowercase hex characters) followed by the index of the link in the message (one digit, from 0)
                 * @example 3f9a0c1b2d4e5f7
                 */
                code: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Found: the original URL is in Location */
            302: {
                headers: {
                    /** @description The link as the broadcast’s message gave it */
                    location: string;
                    /** @description Always `no-store`: every click comes back here and is counted */
                    "cache-control": string;
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Malformed request: an HTTP/1.1 request has no Host header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description No tracked link has this code */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Validation failed: `errors` names every bad field (a query, path or body value; text holding U+0000 or a lone surrogate is refused everywhere) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unexpected error: the response has a fixed text; the details are only in the server log */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The server is shutting down and takes no new requests: send the request again (to another node, if there is one) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    listCarriers: {
        parameters: {
            query?: {
                /** @description Page to return, from 1 */
                pageNumber?: number;
                /** @description Items per page, 1 to 100 */
                pageSize?: number;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        items: {
                            /** Format: uuid */
                            id: string;
                            name: string;
                            /** @enum {unknown} */
                            type: "simulator" | "smpp" | "twilio";
                            enabled: boolean;
                            /** @description The type’s config, secrets shown as ******** */
                            config: {
                                [key: string]: unknown;
                            };
                            /**
                             * @description environment: the connection CARRIER and SMPP_URL make, named `default`; read-only
                             * @enum {unknown}
                             */
                            source: "store" | "environment";
                            state: {
                                /** @enum {unknown} */
                                status: "up" | "connecting" | "down" | "disabled";
                                /**
                                 * Format: date-time
                                 * @example 2026-11-21T10:00:00.000Z
                                 */
                                since: string;
                                /** @description Parts handed over on this node and not answered yet */
                                inFlight: number;
                                /** @description Parts it accepted in the last 60 s, on this node */
                                sentLastMinute: number;
                                lastError: string | null;
                            };
                            /**
                             * Format: date-time
                             * @example 2026-11-21T10:00:00.000Z
                             */
                            createdAt: string;
                            /**
                             * Format: date-time
                             * @example 2026-11-21T10:00:00.000Z
                             */
                            updatedAt: string;
                        }[];
                        totalCount: number;
                        pageNumber: number;
                        totalPages: number;
                        hasNextPage: boolean;
                        hasPreviousPage: boolean;
                    };
                };
            };
            /** @description Malformed request: an HTTP/1.1 request has no Host header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, invalid, expired or revoked credentials (send Authorization: Bearer <ADMIN_TOKEN>) */
            401: {
                headers: {
                    /** @description Always `Bearer` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description An API key was sent: this endpoint takes the operator token (ADMIN_TOKEN) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Validation failed: `errors` names every bad field (a query, path or body value; text holding U+0000 or a lone surrogate is refused everywhere) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Rate limited (RATE_LIMIT_PER_SECOND per API key, session or address); send again after Retry-After seconds */
            429: {
                headers: {
                    /** @description Seconds to wait before sending again */
                    "retry-after"?: number;
                    /** @description Requests allowed in the window */
                    "ratelimit-limit"?: number;
                    /** @description Requests left in the window (0) */
                    "ratelimit-remaining"?: number;
                    /** @description Seconds until the window resets */
                    "ratelimit-reset"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unexpected error: the response has a fixed text; the details are only in the server log */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The server is shutting down and takes no new requests: send the request again (to another node, if there is one) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    createCarrier: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** @description A connection of one type with that type’s config. A twilio connection needs PUBLIC_URL, the address its callbacks come to */
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "name": "smsc-eu",
                 *       "type": "smpp",
                 *       "config": {
                 *         "url": "smpp://acme:secret@smsc.example.net:2775",
                 *         "window": 10,
                 *         "maxPerSecond": 200
                 *       }
                 *     }
                 */
                "application/json": {
                    /**
                     * @description 1 to 64 of a-z, 0-9 and -; unique
                     * @example smsc-eu
                     */
                    name: string;
                    /** @enum {string} */
                    type: "simulator";
                    /**
                     * @description A disabled connection is skipped by every route
                     * @default true
                     */
                    enabled?: boolean;
                    config?: {
                        /** @description When its receipts come, after hand-off (default SIMULATOR_DELIVERY_DELAY_MS) */
                        deliveryDelayMs?: number;
                    };
                } | {
                    /**
                     * @description 1 to 64 of a-z, 0-9 and -; unique
                     * @example smsc-eu
                     */
                    name: string;
                    /** @enum {string} */
                    type: "smpp";
                    /**
                     * @description A disabled connection is skipped by every route
                     * @default true
                     */
                    enabled?: boolean;
                    config: {
                        /**
                         * @description smpp://system_id:password@host:port (port 2775 when left out). GET shows the password as ********; sending that back, or leaving the password out in a PATCH, keeps the stored one
                         * @example smpp://acme:secret@smsc.example.net:2775
                         */
                        url: string;
                        /** @description submit_sm awaiting their answer at once, per bind (default SMPP_WINDOW) */
                        window?: number;
                        /** @description submit_sm per second for the connection as a whole, shared by the nodes bound (default SMPP_MAX_PER_SECOND) */
                        maxPerSecond?: number;
                        /** @description How many nodes hold a bind at once (default 1: carriers cap binds per account); leases decide which nodes */
                        binds?: number;
                        /** @description system_type of the bind */
                        systemType?: string;
                    };
                } | {
                    /**
                     * @description 1 to 64 of a-z, 0-9 and -; unique
                     * @example smsc-eu
                     */
                    name: string;
                    /** @enum {string} */
                    type: "twilio";
                    /**
                     * @description A disabled connection is skipped by every route
                     * @default true
                     */
                    enabled?: boolean;
                    config: {
                        /** @description The account (Twilio AC…, or another provider’s project id) */
                        accountSid: string;
                        /** @description Write-only: GET shows ********; leaving it out of a PATCH, or sending ********, keeps the stored one */
                        authToken: string;
                        /**
                         * Format: uri
                         * @description The Messages API base (default https://api.twilio.com)
                         */
                        baseUrl?: string;
                        /** @description Sender used for every message through it, in place of the message’s senderId */
                        from?: string;
                    };
                };
            };
        };
        responses: {
            /** @description The id of the new resource */
            201: {
                headers: {
                    /** @description The path of the resource: /v1/admin/carriers/{id} */
                    location: string;
                    [name: string]: unknown;
                };
                content: {
                    /** @example 0193a5b0-7c1e-7b7a-9a55-3f1d2c4b5a69 */
                    "application/json": string;
                };
            };
            /** @description Malformed request: the body is not valid JSON (or is empty under a JSON content type), Content-Length does not match it, or an HTTP/1.1 request has no Host header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, invalid, expired or revoked credentials (send Authorization: Bearer <ADMIN_TOKEN>) */
            401: {
                headers: {
                    /** @description Always `Bearer` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description An API key was sent: this endpoint takes the operator token (ADMIN_TOKEN) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description A connection has this name (`default` is the one CARRIER and SMPP_URL make) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The request body is over the size limit (BODY_LIMIT_BYTES, 1 MiB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The content type of the body is missing, malformed or not one this endpoint takes: send JSON (application/json) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Validation failed: `errors` names every bad field (a query, path or body value; text holding U+0000 or a lone surrogate is refused everywhere) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Rate limited (RATE_LIMIT_PER_SECOND per API key, session or address); send again after Retry-After seconds */
            429: {
                headers: {
                    /** @description Seconds to wait before sending again */
                    "retry-after"?: number;
                    /** @description Requests allowed in the window */
                    "ratelimit-limit"?: number;
                    /** @description Requests left in the window (0) */
                    "ratelimit-remaining"?: number;
                    /** @description Seconds until the window resets */
                    "ratelimit-reset"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unexpected error: the response has a fixed text; the details are only in the server log */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The server is shutting down and takes no new requests: send the request again (to another node, if there is one) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    getCarrier: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Resource id (UUID) */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Format: uuid */
                        id: string;
                        name: string;
                        /** @enum {unknown} */
                        type: "simulator" | "smpp" | "twilio";
                        enabled: boolean;
                        /** @description The type’s config, secrets shown as ******** */
                        config: {
                            [key: string]: unknown;
                        };
                        /**
                         * @description environment: the connection CARRIER and SMPP_URL make, named `default`; read-only
                         * @enum {unknown}
                         */
                        source: "store" | "environment";
                        state: {
                            /** @enum {unknown} */
                            status: "up" | "connecting" | "down" | "disabled";
                            /**
                             * Format: date-time
                             * @example 2026-11-21T10:00:00.000Z
                             */
                            since: string;
                            /** @description Parts handed over on this node and not answered yet */
                            inFlight: number;
                            /** @description Parts it accepted in the last 60 s, on this node */
                            sentLastMinute: number;
                            lastError: string | null;
                        };
                        /**
                         * Format: date-time
                         * @example 2026-11-21T10:00:00.000Z
                         */
                        createdAt: string;
                        /**
                         * Format: date-time
                         * @example 2026-11-21T10:00:00.000Z
                         */
                        updatedAt: string;
                    };
                };
            };
            /** @description Malformed request: an HTTP/1.1 request has no Host header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, invalid, expired or revoked credentials (send Authorization: Bearer <ADMIN_TOKEN>) */
            401: {
                headers: {
                    /** @description Always `Bearer` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description An API key was sent: this endpoint takes the operator token (ADMIN_TOKEN) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description No carrier connection has this id */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Validation failed: `errors` names every bad field (a query, path or body value; text holding U+0000 or a lone surrogate is refused everywhere) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Rate limited (RATE_LIMIT_PER_SECOND per API key, session or address); send again after Retry-After seconds */
            429: {
                headers: {
                    /** @description Seconds to wait before sending again */
                    "retry-after"?: number;
                    /** @description Requests allowed in the window */
                    "ratelimit-limit"?: number;
                    /** @description Requests left in the window (0) */
                    "ratelimit-remaining"?: number;
                    /** @description Seconds until the window resets */
                    "ratelimit-reset"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unexpected error: the response has a fixed text; the details are only in the server log */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The server is shutting down and takes no new requests: send the request again (to another node, if there is one) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    deleteCarrier: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Resource id (UUID) */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Deleted */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Malformed request: the body is not valid JSON (or is empty under a JSON content type), Content-Length does not match it, or an HTTP/1.1 request has no Host header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, invalid, expired or revoked credentials (send Authorization: Bearer <ADMIN_TOKEN>) */
            401: {
                headers: {
                    /** @description Always `Bearer` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description An API key was sent: this endpoint takes the operator token (ADMIN_TOKEN) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description No carrier connection has this id */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description A route names the connection, or it is the one CARRIER and SMPP_URL make */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The request body is over the size limit (BODY_LIMIT_BYTES, 1 MiB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The content type of the body is missing, malformed or not one this endpoint takes: send JSON (application/json) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Validation failed: `errors` names every bad field (a query, path or body value; text holding U+0000 or a lone surrogate is refused everywhere) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Rate limited (RATE_LIMIT_PER_SECOND per API key, session or address); send again after Retry-After seconds */
            429: {
                headers: {
                    /** @description Seconds to wait before sending again */
                    "retry-after"?: number;
                    /** @description Requests allowed in the window */
                    "ratelimit-limit"?: number;
                    /** @description Requests left in the window (0) */
                    "ratelimit-remaining"?: number;
                    /** @description Seconds until the window resets */
                    "ratelimit-reset"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unexpected error: the response has a fixed text; the details are only in the server log */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The server is shutting down and takes no new requests: send the request again (to another node, if there is one) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    updateCarrier: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Resource id (UUID) */
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /**
                     * @description 1 to 64 of a-z, 0-9 and -; unique
                     * @example smsc-eu
                     */
                    name?: string;
                    enabled?: boolean;
                    /** @description The whole config of the connection’s type (it replaces the stored one), secrets left out or ******** kept as they were */
                    config?: {
                        [key: string]: unknown;
                    };
                };
            };
        };
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Format: uuid */
                        id: string;
                        name: string;
                        /** @enum {unknown} */
                        type: "simulator" | "smpp" | "twilio";
                        enabled: boolean;
                        /** @description The type’s config, secrets shown as ******** */
                        config: {
                            [key: string]: unknown;
                        };
                        /**
                         * @description environment: the connection CARRIER and SMPP_URL make, named `default`; read-only
                         * @enum {unknown}
                         */
                        source: "store" | "environment";
                        state: {
                            /** @enum {unknown} */
                            status: "up" | "connecting" | "down" | "disabled";
                            /**
                             * Format: date-time
                             * @example 2026-11-21T10:00:00.000Z
                             */
                            since: string;
                            /** @description Parts handed over on this node and not answered yet */
                            inFlight: number;
                            /** @description Parts it accepted in the last 60 s, on this node */
                            sentLastMinute: number;
                            lastError: string | null;
                        };
                        /**
                         * Format: date-time
                         * @example 2026-11-21T10:00:00.000Z
                         */
                        createdAt: string;
                        /**
                         * Format: date-time
                         * @example 2026-11-21T10:00:00.000Z
                         */
                        updatedAt: string;
                    };
                };
            };
            /** @description Malformed request: the body is not valid JSON (or is empty under a JSON content type), Content-Length does not match it, or an HTTP/1.1 request has no Host header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, invalid, expired or revoked credentials (send Authorization: Bearer <ADMIN_TOKEN>) */
            401: {
                headers: {
                    /** @description Always `Bearer` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description An API key was sent: this endpoint takes the operator token (ADMIN_TOKEN) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description No carrier connection has this id */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The name is taken, or the connection is the one CARRIER and SMPP_URL make */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The request body is over the size limit (BODY_LIMIT_BYTES, 1 MiB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The content type of the body is missing, malformed or not one this endpoint takes: send JSON (application/json) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Validation failed: `errors` names every bad field (a query, path or body value; text holding U+0000 or a lone surrogate is refused everywhere) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Rate limited (RATE_LIMIT_PER_SECOND per API key, session or address); send again after Retry-After seconds */
            429: {
                headers: {
                    /** @description Seconds to wait before sending again */
                    "retry-after"?: number;
                    /** @description Requests allowed in the window */
                    "ratelimit-limit"?: number;
                    /** @description Requests left in the window (0) */
                    "ratelimit-remaining"?: number;
                    /** @description Seconds until the window resets */
                    "ratelimit-reset"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unexpected error: the response has a fixed text; the details are only in the server log */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The server is shutting down and takes no new requests: send the request again (to another node, if there is one) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    getRoutes: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @description Bumped by every change to connections or routes */
                        version: number;
                        routes: {
                            prefix: string;
                            carriers: string[];
                            price: number;
                            accountId: string | null;
                        }[];
                    };
                };
            };
            /** @description Malformed request: an HTTP/1.1 request has no Host header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, invalid, expired or revoked credentials (send Authorization: Bearer <ADMIN_TOKEN>) */
            401: {
                headers: {
                    /** @description Always `Bearer` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description An API key was sent: this endpoint takes the operator token (ADMIN_TOKEN) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Validation failed: `errors` names every bad field (a query, path or body value; text holding U+0000 or a lone surrogate is refused everywhere) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Rate limited (RATE_LIMIT_PER_SECOND per API key, session or address); send again after Retry-After seconds */
            429: {
                headers: {
                    /** @description Seconds to wait before sending again */
                    "retry-after"?: number;
                    /** @description Requests allowed in the window */
                    "ratelimit-limit"?: number;
                    /** @description Requests left in the window (0) */
                    "ratelimit-remaining"?: number;
                    /** @description Seconds until the window resets */
                    "ratelimit-reset"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unexpected error: the response has a fixed text; the details are only in the server log */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The server is shutting down and takes no new requests: send the request again (to another node, if there is one) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    replaceRoutes: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** @description The whole route table; it must have a global "+" route */
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "routes": [
                 *         {
                 *           "prefix": "+",
                 *           "carriers": [
                 *             "smsc-eu",
                 *             "twilio-fallback"
                 *           ],
                 *           "price": 1
                 *         },
                 *         {
                 *           "prefix": "+1",
                 *           "carriers": [
                 *             "twilio-fallback"
                 *           ],
                 *           "price": 2
                 *         }
                 *       ]
                 *     }
                 */
                "application/json": {
                    routes: {
                        /**
                         * @description "+" (every number) or "+" and 1 to 15 digits
                         * @example +44
                         */
                        prefix: string;
                        /** @description Connection names, tried in this order */
                        carriers: string[];
                        /**
                         * @description Credits per segment per recipient
                         * @default 1
                         */
                        price: number;
                        accountId?: string | null;
                    }[];
                };
            };
        };
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @description Bumped by every change to connections or routes */
                        version: number;
                        routes: {
                            prefix: string;
                            carriers: string[];
                            price: number;
                            accountId: string | null;
                        }[];
                    };
                };
            };
            /** @description Malformed request: the body is not valid JSON (or is empty under a JSON content type), Content-Length does not match it, or an HTTP/1.1 request has no Host header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, invalid, expired or revoked credentials (send Authorization: Bearer <ADMIN_TOKEN>) */
            401: {
                headers: {
                    /** @description Always `Bearer` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description An API key was sent: this endpoint takes the operator token (ADMIN_TOKEN) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The request body is over the size limit (BODY_LIMIT_BYTES, 1 MiB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The content type of the body is missing, malformed or not one this endpoint takes: send JSON (application/json) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Validation failed: `errors` names every bad field (a query, path or body value; text holding U+0000 or a lone surrogate is refused everywhere) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Rate limited (RATE_LIMIT_PER_SECOND per API key, session or address); send again after Retry-After seconds */
            429: {
                headers: {
                    /** @description Seconds to wait before sending again */
                    "retry-after"?: number;
                    /** @description Requests allowed in the window */
                    "ratelimit-limit"?: number;
                    /** @description Requests left in the window (0) */
                    "ratelimit-remaining"?: number;
                    /** @description Seconds until the window resets */
                    "ratelimit-reset"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unexpected error: the response has a fixed text; the details are only in the server log */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The server is shutting down and takes no new requests: send the request again (to another node, if there is one) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    twilioStatusCallback: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The carrier connection’s id (GET /v1/admin/carriers) */
                connectionId: string;
            };
            cookie?: never;
        };
        /** @description Twilio’s form parameters (application/x-www-form-urlencoded), as Twilio sends them */
        requestBody: {
            content: {
                "application/x-www-form-urlencoded": {
                    [key: string]: string;
                };
            };
        };
        responses: {
            /** @description Taken: Twilio sends nothing back to the handset */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Malformed request: the body is not valid JSON (or is empty under a JSON content type), Content-Length does not match it, or an HTTP/1.1 request has no Host header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description X-Twilio-Signature is missing or is not the connection’s signature of this URL and these parameters */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description No twilio connection with this id runs here */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The request body is over the size limit (BODY_LIMIT_BYTES, 1 MiB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The content type of the body is missing, malformed or not one this endpoint takes: send JSON (application/json) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Validation failed: `errors` names every bad field (a query, path or body value; text holding U+0000 or a lone surrogate is refused everywhere) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Rate limited (RATE_LIMIT_PER_SECOND per API key, session or address); send again after Retry-After seconds */
            429: {
                headers: {
                    /** @description Seconds to wait before sending again */
                    "retry-after"?: number;
                    /** @description Requests allowed in the window */
                    "ratelimit-limit"?: number;
                    /** @description Requests left in the window (0) */
                    "ratelimit-remaining"?: number;
                    /** @description Seconds until the window resets */
                    "ratelimit-reset"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unexpected error: the response has a fixed text; the details are only in the server log */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The server is shutting down and takes no new requests: send the request again (to another node, if there is one) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    twilioInboundMessage: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The carrier connection’s id (GET /v1/admin/carriers) */
                connectionId: string;
            };
            cookie?: never;
        };
        /** @description Twilio’s form parameters (application/x-www-form-urlencoded), as Twilio sends them */
        requestBody: {
            content: {
                "application/x-www-form-urlencoded": {
                    [key: string]: string;
                };
            };
        };
        responses: {
            /** @description Taken: Twilio sends nothing back to the handset */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Malformed request: the body is not valid JSON (or is empty under a JSON content type), Content-Length does not match it, or an HTTP/1.1 request has no Host header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description X-Twilio-Signature is missing or is not the connection’s signature of this URL and these parameters */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description No twilio connection with this id runs here */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The request body is over the size limit (BODY_LIMIT_BYTES, 1 MiB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The content type of the body is missing, malformed or not one this endpoint takes: send JSON (application/json) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Validation failed: `errors` names every bad field (a query, path or body value; text holding U+0000 or a lone surrogate is refused everywhere) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Rate limited (RATE_LIMIT_PER_SECOND per API key, session or address); send again after Retry-After seconds */
            429: {
                headers: {
                    /** @description Seconds to wait before sending again */
                    "retry-after"?: number;
                    /** @description Requests allowed in the window */
                    "ratelimit-limit"?: number;
                    /** @description Requests left in the window (0) */
                    "ratelimit-remaining"?: number;
                    /** @description Seconds until the window resets */
                    "ratelimit-reset"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unexpected error: the response has a fixed text; the details are only in the server log */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The server is shutting down and takes no new requests: send the request again (to another node, if there is one) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    listWebhooks: {
        parameters: {
            query?: {
                /** @description Page to return, from 1 */
                pageNumber?: number;
                /** @description Items per page, 1 to 100 */
                pageSize?: number;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        items: {
                            /** Format: uuid */
                            id: string;
                            /** @description HTTPS URL that receives the POSTs */
                            endpoint: string;
                            /** @description One of the 13 event types of the spec, or LinkClicked (an addition: a recipient followed a tracked link of a broadcast) */
                            eventType: "SmsSent" | "SmsDelivered" | "SmsFailed" | "InboundMessage" | "DeliveryReceipt" | "ContactCreated" | "ContactUpdated" | "ContactDeleted" | "CampaignCreated" | "CampaignUpdated" | "CampaignDeleted" | "OptOut" | "LowBalance" | "LinkClicked";
                            isActive: boolean;
                            /**
                             * Format: date-time
                             * @example 2026-11-21T10:00:00.000Z
                             */
                            createdAt: string;
                        }[];
                        totalCount: number;
                        pageNumber: number;
                        totalPages: number;
                        hasNextPage: boolean;
                        hasPreviousPage: boolean;
                    };
                };
            };
            /** @description Malformed request: an HTTP/1.1 request has no Host header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, invalid, expired or revoked credentials (send Authorization: Bearer <API key or session JWT>) */
            401: {
                headers: {
                    /** @description Always `Bearer` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description An Sms API key was sent: this endpoint takes a Full or Playground key, or a session */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Validation failed: `errors` names every bad field (a query, path or body value; text holding U+0000 or a lone surrogate is refused everywhere) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Rate limited (RATE_LIMIT_PER_SECOND per API key, session or address); send again after Retry-After seconds */
            429: {
                headers: {
                    /** @description Seconds to wait before sending again */
                    "retry-after"?: number;
                    /** @description Requests allowed in the window */
                    "ratelimit-limit"?: number;
                    /** @description Requests left in the window (0) */
                    "ratelimit-remaining"?: number;
                    /** @description Seconds until the window resets */
                    "ratelimit-reset"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unexpected error: the response has a fixed text; the details are only in the server log */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The server is shutting down and takes no new requests: send the request again (to another node, if there is one) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    createWebhook: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "endpoint": "https://example.com/hooks/sms",
                 *       "eventType": "SmsDelivered"
                 *     }
                 */
                "application/json": {
                    /** @description An absolute https: URL without user or password, whose host is a public address (unless WEBHOOK_ALLOW_PRIVATE_NETWORKS is set) */
                    endpoint: string;
                    /** @description One of the 13 event types of the spec, or LinkClicked (an addition: a recipient followed a tracked link of a broadcast) */
                    eventType: "SmsSent" | "SmsDelivered" | "SmsFailed" | "InboundMessage" | "DeliveryReceipt" | "ContactCreated" | "ContactUpdated" | "ContactDeleted" | "CampaignCreated" | "CampaignUpdated" | "CampaignDeleted" | "OptOut" | "LowBalance" | "LinkClicked";
                };
            };
        };
        responses: {
            /** @description The id of the new resource */
            201: {
                headers: {
                    /** @description The path of the resource: /v1/webhooks/{id} */
                    location: string;
                    [name: string]: unknown;
                };
                content: {
                    /** @example 0193a5b0-7c1e-7b7a-9a55-3f1d2c4b5a69 */
                    "application/json": string;
                };
            };
            /** @description Malformed request: the body is not valid JSON (or is empty under a JSON content type), Content-Length does not match it, or an HTTP/1.1 request has no Host header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, invalid, expired or revoked credentials (send Authorization: Bearer <API key or session JWT>) */
            401: {
                headers: {
                    /** @description Always `Bearer` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description An Sms API key was sent: this endpoint takes a Full or Playground key, or a session */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The request body is over the size limit (BODY_LIMIT_BYTES, 1 MiB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The content type of the body is missing, malformed or not one this endpoint takes: send JSON (application/json) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Validation failed: `errors` names every bad field (a query, path or body value; text holding U+0000 or a lone surrogate is refused everywhere) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Rate limited (RATE_LIMIT_PER_SECOND per API key, session or address); send again after Retry-After seconds */
            429: {
                headers: {
                    /** @description Seconds to wait before sending again */
                    "retry-after"?: number;
                    /** @description Requests allowed in the window */
                    "ratelimit-limit"?: number;
                    /** @description Requests left in the window (0) */
                    "ratelimit-remaining"?: number;
                    /** @description Seconds until the window resets */
                    "ratelimit-reset"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unexpected error: the response has a fixed text; the details are only in the server log */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The server is shutting down and takes no new requests: send the request again (to another node, if there is one) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    getWebhook: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Resource id (UUID) */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Format: uuid */
                        id: string;
                        /** @description HTTPS URL that receives the POSTs */
                        endpoint: string;
                        /** @description One of the 13 event types of the spec, or LinkClicked (an addition: a recipient followed a tracked link of a broadcast) */
                        eventType: "SmsSent" | "SmsDelivered" | "SmsFailed" | "InboundMessage" | "DeliveryReceipt" | "ContactCreated" | "ContactUpdated" | "ContactDeleted" | "CampaignCreated" | "CampaignUpdated" | "CampaignDeleted" | "OptOut" | "LowBalance" | "LinkClicked";
                        isActive: boolean;
                        /**
                         * Format: date-time
                         * @example 2026-11-21T10:00:00.000Z
                         */
                        createdAt: string;
                    };
                };
            };
            /** @description Malformed request: an HTTP/1.1 request has no Host header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, invalid, expired or revoked credentials (send Authorization: Bearer <API key or session JWT>) */
            401: {
                headers: {
                    /** @description Always `Bearer` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description An Sms API key was sent: this endpoint takes a Full or Playground key, or a session */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The webhook does not exist, or belongs to another account */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Validation failed: `errors` names every bad field (a query, path or body value; text holding U+0000 or a lone surrogate is refused everywhere) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Rate limited (RATE_LIMIT_PER_SECOND per API key, session or address); send again after Retry-After seconds */
            429: {
                headers: {
                    /** @description Seconds to wait before sending again */
                    "retry-after"?: number;
                    /** @description Requests allowed in the window */
                    "ratelimit-limit"?: number;
                    /** @description Requests left in the window (0) */
                    "ratelimit-remaining"?: number;
                    /** @description Seconds until the window resets */
                    "ratelimit-reset"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unexpected error: the response has a fixed text; the details are only in the server log */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The server is shutting down and takes no new requests: send the request again (to another node, if there is one) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    deleteWebhook: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Resource id (UUID) */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Done */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Malformed request: the body is not valid JSON (or is empty under a JSON content type), Content-Length does not match it, or an HTTP/1.1 request has no Host header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, invalid, expired or revoked credentials (send Authorization: Bearer <API key or session JWT>) */
            401: {
                headers: {
                    /** @description Always `Bearer` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description An Sms API key was sent: this endpoint takes a Full or Playground key, or a session */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The webhook does not exist, or belongs to another account */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The request body is over the size limit (BODY_LIMIT_BYTES, 1 MiB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The content type of the body is missing, malformed or not one this endpoint takes: send JSON (application/json) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Validation failed: `errors` names every bad field (a query, path or body value; text holding U+0000 or a lone surrogate is refused everywhere) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Rate limited (RATE_LIMIT_PER_SECOND per API key, session or address); send again after Retry-After seconds */
            429: {
                headers: {
                    /** @description Seconds to wait before sending again */
                    "retry-after"?: number;
                    /** @description Requests allowed in the window */
                    "ratelimit-limit"?: number;
                    /** @description Requests left in the window (0) */
                    "ratelimit-remaining"?: number;
                    /** @description Seconds until the window resets */
                    "ratelimit-reset"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unexpected error: the response has a fixed text; the details are only in the server log */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The server is shutting down and takes no new requests: send the request again (to another node, if there is one) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    toggleWebhook: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Resource id (UUID) */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Done */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Malformed request: the body is not valid JSON (or is empty under a JSON content type), Content-Length does not match it, or an HTTP/1.1 request has no Host header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, invalid, expired or revoked credentials (send Authorization: Bearer <API key or session JWT>) */
            401: {
                headers: {
                    /** @description Always `Bearer` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description An Sms API key was sent: this endpoint takes a Full or Playground key, or a session */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The webhook does not exist, or belongs to another account */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The request body is over the size limit (BODY_LIMIT_BYTES, 1 MiB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The content type of the body is missing, malformed or not one this endpoint takes: send JSON (application/json) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Validation failed: `errors` names every bad field (a query, path or body value; text holding U+0000 or a lone surrogate is refused everywhere) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Rate limited (RATE_LIMIT_PER_SECOND per API key, session or address); send again after Retry-After seconds */
            429: {
                headers: {
                    /** @description Seconds to wait before sending again */
                    "retry-after"?: number;
                    /** @description Requests allowed in the window */
                    "ratelimit-limit"?: number;
                    /** @description Requests left in the window (0) */
                    "ratelimit-remaining"?: number;
                    /** @description Seconds until the window resets */
                    "ratelimit-reset"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unexpected error: the response has a fixed text; the details are only in the server log */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The server is shutting down and takes no new requests: send the request again (to another node, if there is one) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    getWebhookSecret: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Resource id (UUID) */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @description whsec_ and the base64 of the key; verify deliveries with it (Standard Webhooks) */
                        secret: string;
                    };
                };
            };
            /** @description Malformed request: an HTTP/1.1 request has no Host header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, invalid, expired or revoked credentials (send Authorization: Bearer <API key or session JWT>) */
            401: {
                headers: {
                    /** @description Always `Bearer` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description An Sms API key was sent: this endpoint takes a Full or Playground key, or a session */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The webhook does not exist, or belongs to another account */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Validation failed: `errors` names every bad field (a query, path or body value; text holding U+0000 or a lone surrogate is refused everywhere) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Rate limited (RATE_LIMIT_PER_SECOND per API key, session or address); send again after Retry-After seconds */
            429: {
                headers: {
                    /** @description Seconds to wait before sending again */
                    "retry-after"?: number;
                    /** @description Requests allowed in the window */
                    "ratelimit-limit"?: number;
                    /** @description Requests left in the window (0) */
                    "ratelimit-remaining"?: number;
                    /** @description Seconds until the window resets */
                    "ratelimit-reset"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unexpected error: the response has a fixed text; the details are only in the server log */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The server is shutting down and takes no new requests: send the request again (to another node, if there is one) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    rotateWebhookSecret: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Resource id (UUID) */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @description whsec_ and the base64 of the key; verify deliveries with it (Standard Webhooks) */
                        secret: string;
                    };
                };
            };
            /** @description Malformed request: the body is not valid JSON (or is empty under a JSON content type), Content-Length does not match it, or an HTTP/1.1 request has no Host header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, invalid, expired or revoked credentials (send Authorization: Bearer <API key or session JWT>) */
            401: {
                headers: {
                    /** @description Always `Bearer` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description An Sms API key was sent: this endpoint takes a Full or Playground key, or a session */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The webhook does not exist, or belongs to another account */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The request body is over the size limit (BODY_LIMIT_BYTES, 1 MiB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The content type of the body is missing, malformed or not one this endpoint takes: send JSON (application/json) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Validation failed: `errors` names every bad field (a query, path or body value; text holding U+0000 or a lone surrogate is refused everywhere) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Rate limited (RATE_LIMIT_PER_SECOND per API key, session or address); send again after Retry-After seconds */
            429: {
                headers: {
                    /** @description Seconds to wait before sending again */
                    "retry-after"?: number;
                    /** @description Requests allowed in the window */
                    "ratelimit-limit"?: number;
                    /** @description Requests left in the window (0) */
                    "ratelimit-remaining"?: number;
                    /** @description Seconds until the window resets */
                    "ratelimit-reset"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unexpected error: the response has a fixed text; the details are only in the server log */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The server is shutting down and takes no new requests: send the request again (to another node, if there is one) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    listWebhookLogs: {
        parameters: {
            query?: {
                /** @description Entries to return, newest first (1 to 1000) */
                limit?: number;
            };
            header?: never;
            path: {
                /** @description Resource id (UUID) */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Format: uuid */
                        id: string;
                        /** Format: uuid */
                        webhookId: string;
                        /** @description One of the 13 event types of the spec, or LinkClicked (an addition: a recipient followed a tracked link of a broadcast) */
                        eventType: "SmsSent" | "SmsDelivered" | "SmsFailed" | "InboundMessage" | "DeliveryReceipt" | "ContactCreated" | "ContactUpdated" | "ContactDeleted" | "CampaignCreated" | "CampaignUpdated" | "CampaignDeleted" | "OptOut" | "LowBalance" | "LinkClicked";
                        /** @description The receiver's HTTP status; 0 when no response came */
                        statusCode: number;
                        /** @description Attempt number for this event and webhook, from 1 */
                        attempt: number;
                        /**
                         * Format: date-time
                         * @example 2026-11-21T10:00:00.000Z
                         */
                        deliveredAt: string;
                        /** @description A 2xx came within WEBHOOK_TIMEOUT_MS */
                        success: boolean;
                        durationMs: number;
                        /** @description Why the attempt failed, when it did */
                        error: string | null;
                        /** @description The first 1 KiB of the response body */
                        responseBody: string | null;
                        /** @description The webhook-id header: the same for every attempt of one event */
                        eventId: string;
                    }[];
                };
            };
            /** @description Malformed request: an HTTP/1.1 request has no Host header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, invalid, expired or revoked credentials (send Authorization: Bearer <API key or session JWT>) */
            401: {
                headers: {
                    /** @description Always `Bearer` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description An Sms API key was sent: this endpoint takes a Full or Playground key, or a session */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The webhook does not exist, or belongs to another account */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Validation failed: `errors` names every bad field (a query, path or body value; text holding U+0000 or a lone surrogate is refused everywhere) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Rate limited (RATE_LIMIT_PER_SECOND per API key, session or address); send again after Retry-After seconds */
            429: {
                headers: {
                    /** @description Seconds to wait before sending again */
                    "retry-after"?: number;
                    /** @description Requests allowed in the window */
                    "ratelimit-limit"?: number;
                    /** @description Requests left in the window (0) */
                    "ratelimit-remaining"?: number;
                    /** @description Seconds until the window resets */
                    "ratelimit-reset"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unexpected error: the response has a fixed text; the details are only in the server log */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The server is shutting down and takes no new requests: send the request again (to another node, if there is one) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    retryWebhookDelivery: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Delivery log entry id */
                logId: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Format: uuid */
                        id: string;
                        /** Format: uuid */
                        webhookId: string;
                        /** @description One of the 13 event types of the spec, or LinkClicked (an addition: a recipient followed a tracked link of a broadcast) */
                        eventType: "SmsSent" | "SmsDelivered" | "SmsFailed" | "InboundMessage" | "DeliveryReceipt" | "ContactCreated" | "ContactUpdated" | "ContactDeleted" | "CampaignCreated" | "CampaignUpdated" | "CampaignDeleted" | "OptOut" | "LowBalance" | "LinkClicked";
                        /** @description The receiver's HTTP status; 0 when no response came */
                        statusCode: number;
                        /** @description Attempt number for this event and webhook, from 1 */
                        attempt: number;
                        /**
                         * Format: date-time
                         * @example 2026-11-21T10:00:00.000Z
                         */
                        deliveredAt: string;
                        /** @description A 2xx came within WEBHOOK_TIMEOUT_MS */
                        success: boolean;
                        durationMs: number;
                        /** @description Why the attempt failed, when it did */
                        error: string | null;
                        /** @description The first 1 KiB of the response body */
                        responseBody: string | null;
                        /** @description The webhook-id header: the same for every attempt of one event */
                        eventId: string;
                    };
                };
            };
            /** @description Malformed request: the body is not valid JSON (or is empty under a JSON content type), Content-Length does not match it, or an HTTP/1.1 request has no Host header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, invalid, expired or revoked credentials (send Authorization: Bearer <API key or session JWT>) */
            401: {
                headers: {
                    /** @description Always `Bearer` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description An Sms API key was sent: this endpoint takes a Full or Playground key, or a session */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The log entry, or its webhook, does not exist or belongs to another account */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description This delivery is being attempted right now; retry it once that attempt is logged */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The request body is over the size limit (BODY_LIMIT_BYTES, 1 MiB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The content type of the body is missing, malformed or not one this endpoint takes: send JSON (application/json) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Validation failed: `errors` names every bad field (a query, path or body value; text holding U+0000 or a lone surrogate is refused everywhere) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Rate limited (RATE_LIMIT_PER_SECOND per API key, session or address); send again after Retry-After seconds */
            429: {
                headers: {
                    /** @description Seconds to wait before sending again */
                    "retry-after"?: number;
                    /** @description Requests allowed in the window */
                    "ratelimit-limit"?: number;
                    /** @description Requests left in the window (0) */
                    "ratelimit-remaining"?: number;
                    /** @description Seconds until the window resets */
                    "ratelimit-reset"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unexpected error: the response has a fixed text; the details are only in the server log */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The server is shutting down and takes no new requests: send the request again (to another node, if there is one) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    testWebhook: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "webhookId": "0193a5b0-7c1e-7b7a-9a55-3f1d2c4b5a69",
                 *       "payload": "{\"event\":\"SmsDelivered\",\"messageId\":\"…\"}"
                 *     }
                 */
                "application/json": {
                    /** @description The webhook to send to (an id of this account) */
                    webhookId: string;
                    /** @description A JSON document, as a string; sent as the body */
                    payload: string;
                };
            };
        };
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Format: uuid */
                        id: string;
                        /** Format: uuid */
                        webhookId: string;
                        /** @description One of the 13 event types of the spec, or LinkClicked (an addition: a recipient followed a tracked link of a broadcast) */
                        eventType: "SmsSent" | "SmsDelivered" | "SmsFailed" | "InboundMessage" | "DeliveryReceipt" | "ContactCreated" | "ContactUpdated" | "ContactDeleted" | "CampaignCreated" | "CampaignUpdated" | "CampaignDeleted" | "OptOut" | "LowBalance" | "LinkClicked";
                        /** @description The receiver's HTTP status; 0 when no response came */
                        statusCode: number;
                        /** @description Attempt number for this event and webhook, from 1 */
                        attempt: number;
                        /**
                         * Format: date-time
                         * @example 2026-11-21T10:00:00.000Z
                         */
                        deliveredAt: string;
                        /** @description A 2xx came within WEBHOOK_TIMEOUT_MS */
                        success: boolean;
                        durationMs: number;
                        /** @description Why the attempt failed, when it did */
                        error: string | null;
                        /** @description The first 1 KiB of the response body */
                        responseBody: string | null;
                        /** @description The webhook-id header: the same for every attempt of one event */
                        eventId: string;
                    };
                };
            };
            /** @description Malformed request: the body is not valid JSON (or is empty under a JSON content type), Content-Length does not match it, or an HTTP/1.1 request has no Host header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, invalid, expired or revoked credentials (send Authorization: Bearer <API key or session JWT>) */
            401: {
                headers: {
                    /** @description Always `Bearer` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description An Sms API key was sent: this endpoint takes a Full or Playground key, or a session */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description webhookId names no webhook of this account */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The request body is over the size limit (BODY_LIMIT_BYTES, 1 MiB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The content type of the body is missing, malformed or not one this endpoint takes: send JSON (application/json) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Validation failed: `errors` names every bad field (a query, path or body value; text holding U+0000 or a lone surrogate is refused everywhere) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Rate limited (RATE_LIMIT_PER_SECOND per API key, session or address); send again after Retry-After seconds */
            429: {
                headers: {
                    /** @description Seconds to wait before sending again */
                    "retry-after"?: number;
                    /** @description Requests allowed in the window */
                    "ratelimit-limit"?: number;
                    /** @description Requests left in the window (0) */
                    "ratelimit-remaining"?: number;
                    /** @description Seconds until the window resets */
                    "ratelimit-reset"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unexpected error: the response has a fixed text; the details are only in the server log */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The server is shutting down and takes no new requests: send the request again (to another node, if there is one) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    getWebhookStats: {
        parameters: {
            query: {
                /**
                 * @description The series starts with the interval holding this instant
                 * @example 2026-11-01T00:00:00Z
                 */
                from: string;
                /**
                 * @description The series ends with the interval holding the instant just before this one (exclusive); at most 2000 intervals from `from`
                 * @example 2026-12-01T00:00:00Z
                 */
                to: string;
                /** @description The length of each interval of the series: a local hour or a local day of `timeZone` */
                interval: "hour" | "day";
                /**
                 * @description The IANA time zone whose hours or days the intervals are; UTC when absent
                 * @example Europe/Paris
                 */
                timeZone?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @description The length of each interval of the series: a local hour or a local day of `timeZone` */
                        interval: "hour" | "day";
                        /** @description The time zone of the intervals, as given (UTC when none was) */
                        timeZone: string;
                        /** @description Every interval from the one holding `from` to the one before `to`, in order, those without attempts included */
                        series: {
                            /**
                             * Format: date-time
                             * @description When the interval begins (UTC); it ends where the next one begins
                             * @example 2026-11-21T00:00:00.000Z
                             */
                            start: string;
                            /** @description Attempts answered with a 2xx */
                            delivered: number;
                            /** @description Failed attempts after which no automatic attempt was due: the delivery ended without success (its retries used up, a 410, its webhook switched off), or a test or retry on request of a delivery that had ended */
                            failed: number;
                            /** @description Failed attempts after which the delivery waited for its next automatic attempt */
                            retried: number;
                        }[];
                        /** @description Where deliveries stand now, whatever `from` and `to` are */
                        backlog: {
                            /** @description Deliveries of the account not finished now: first attempts not made yet, and deliveries waiting for a retry */
                            pending: number;
                            /** @description When the longest-waiting of them was due; null when none is pending */
                            oldestPendingAt: string | null;
                        };
                    };
                };
            };
            /** @description Malformed request: an HTTP/1.1 request has no Host header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, invalid, expired or revoked credentials (send Authorization: Bearer <API key or session JWT>) */
            401: {
                headers: {
                    /** @description Always `Bearer` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description An Sms API key was sent: this endpoint takes a Full or Playground key, or a session */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Validation failed: `errors` names every bad field (a query, path or body value; text holding U+0000 or a lone surrogate is refused everywhere) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Rate limited (RATE_LIMIT_PER_SECOND per API key, session or address); send again after Retry-After seconds */
            429: {
                headers: {
                    /** @description Seconds to wait before sending again */
                    "retry-after"?: number;
                    /** @description Requests allowed in the window */
                    "ratelimit-limit"?: number;
                    /** @description Requests left in the window (0) */
                    "ratelimit-remaining"?: number;
                    /** @description Seconds until the window resets */
                    "ratelimit-reset"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unexpected error: the response has a fixed text; the details are only in the server log */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The server is shutting down and takes no new requests: send the request again (to another node, if there is one) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    issuePushToken: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "channels": [
                 *         "user:42",
                 *         "order:1001"
                 *       ],
                 *       "userId": "42",
                 *       "ttlSeconds": 3600
                 *     }
                 */
                "application/json": {
                    /** @description Channels the token may read, 1 to 100; duplicates count once; at most 8192 bytes as JSON together */
                    channels: string[];
                    /** @description Your id for the user the token is for; tags the token */
                    userId?: string;
                    /**
                     * @description Lifetime in seconds; the stream ends when it runs out
                     * @default 3600
                     */
                    ttlSeconds?: number;
                };
            };
        };
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @description A signed JWT; pass it as the token query parameter of GET /v1/push/stream */
                        token: string;
                        /**
                         * Format: date-time
                         * @example 2026-11-21T10:00:00.000Z
                         */
                        expiresAt: string;
                        channels: string[];
                    };
                };
            };
            /** @description Malformed request: the body is not valid JSON (or is empty under a JSON content type), Content-Length does not match it, or an HTTP/1.1 request has no Host header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, invalid, expired or revoked credentials (send Authorization: Bearer <API key or session JWT>) */
            401: {
                headers: {
                    /** @description Always `Bearer` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description An Sms API key was sent: this endpoint takes a Full or Playground key, or a session */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The request body is over the size limit (BODY_LIMIT_BYTES, 1 MiB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The content type of the body is missing, malformed or not one this endpoint takes: send JSON (application/json) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Validation failed: `errors` names every bad field (a query, path or body value; text holding U+0000 or a lone surrogate is refused everywhere) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Rate limited (RATE_LIMIT_PER_SECOND per API key, session or address); send again after Retry-After seconds */
            429: {
                headers: {
                    /** @description Seconds to wait before sending again */
                    "retry-after"?: number;
                    /** @description Requests allowed in the window */
                    "ratelimit-limit"?: number;
                    /** @description Requests left in the window (0) */
                    "ratelimit-remaining"?: number;
                    /** @description Seconds until the window resets */
                    "ratelimit-reset"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unexpected error: the response has a fixed text; the details are only in the server log */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The server is shutting down and takes no new requests: send the request again (to another node, if there is one) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    publishPushEvent: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "channel": "order:1001",
                 *       "event": "status",
                 *       "data": {
                 *         "status": "shipped"
                 *       }
                 *     }
                 */
                "application/json": {
                    /** @description A channel name; channels are per account */
                    channel: string;
                    /** @description The SSE event name: no line breaks, and not "connected", which the service sends on open */
                    event: string;
                    /** @description Any JSON object: the SSE data */
                    data: {
                        [key: string]: unknown;
                    };
                };
            };
        };
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /**
                         * Format: uuid
                         * @description Names this publish; the stream numbers events with its own SSE ids
                         */
                        messageId: string;
                        /** @description Stream connections, on every node, subscribed to the channel at publish time */
                        delivered: number;
                        /** @description Always 0: push is free */
                        creditsUsed: number;
                    };
                };
            };
            /** @description Malformed request: the body is not valid JSON (or is empty under a JSON content type), Content-Length does not match it, or an HTTP/1.1 request has no Host header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Missing, invalid, expired or revoked credentials (send Authorization: Bearer <API key or session JWT>) */
            401: {
                headers: {
                    /** @description Always `Bearer` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description An Sms API key was sent: this endpoint takes a Full or Playground key, or a session */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The request body is over 65536 bytes */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The content type of the body is missing, malformed or not one this endpoint takes: send JSON (application/json) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Validation failed: `errors` names every bad field (a query, path or body value; text holding U+0000 or a lone surrogate is refused everywhere) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Rate limited (RATE_LIMIT_PER_SECOND per API key, session or address); send again after Retry-After seconds */
            429: {
                headers: {
                    /** @description Seconds to wait before sending again */
                    "retry-after"?: number;
                    /** @description Requests allowed in the window */
                    "ratelimit-limit"?: number;
                    /** @description Requests left in the window (0) */
                    "ratelimit-remaining"?: number;
                    /** @description Seconds until the window resets */
                    "ratelimit-reset"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unexpected error: the response has a fixed text; the details are only in the server log */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The server is shutting down and takes no new requests: send the request again (to another node, if there is one) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    streamPushEvents: {
        parameters: {
            query: {
                /** @description The push token from POST /v1/push/tokens; a request without a valid one is a 401 */
                token: string;
                /** @description The last SSE id seen, for a new EventSource that cannot set the Last-Event-ID header; the header wins */
                lastEventId?: string;
            };
            header?: {
                /** @description The last SSE id seen: the stream replays what came after it */
                "last-event-id"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The event stream */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/event-stream": string;
                };
            };
            /** @description Malformed request: an HTTP/1.1 request has no Host header */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The token is missing, invalid or expired */
            401: {
                headers: {
                    /** @description Always `Bearer` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Validation failed: `errors` names every bad field (a query, path or body value; text holding U+0000 or a lone surrogate is refused everywhere) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unexpected error: the response has a fixed text; the details are only in the server log */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description The server is shutting down and takes no new requests: send the request again (to another node, if there is one) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
}
