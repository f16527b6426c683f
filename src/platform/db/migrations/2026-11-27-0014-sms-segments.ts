import { sql, type Kysely } from 'kysely'
import type { MigrationDialect } from './index.js'

// Frozen in time: a migration never imports application code, so the GSM 03.38 tables
// are written out here, as bracket expressions of PostgreSQL's regular expressions (Greek
// capitals escaped, as they look like Latin letters; ' doubled for the SQL literal).
// The basic table without ESC (U+001B is not GSM-7 text), then the extension table,
// whose characters take two septets (ESC and a code).
const BASIC = String.raw`@£$¥èéùìòÇ\nØø\rÅå\u0394_\u03a6\u0393\u039b\u03a9\u03a0\u03a8\u03a3\u0398\u039eÆæßÉ !"#¤%&''()*+,\-./0123456789:;<=>?¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà`
const EXTENSION = String.raw`\f\^{}\\\[~\]|€`
// Characters outside the BMP: two UTF-16 units each (a surrogate pair) where length()
// counts one code point.
const ASTRAL = String.raw`\U00010000-\U0010ffff`

/**
 * sms_segments(text): the parts a text is sent and charged as, exactly as analyzeSms
 * (src/modules/messaging/encoding.ts) counts them, so that a broadcast's personalised
 * texts can be counted where they are rendered. Most texts take a regular expression or
 * two and arithmetic; only GSM-7 texts with extension characters and UCS-2 texts with
 * characters outside the BMP count those characters, part by part when they take more
 * than one, since there a part may end a unit short (an escape or a surrogate pair is
 * never split). Assumes a UTF8 database, where length() counts code points. On SQLite
 * the messaging module registers the same function on every connection (sql-functions.ts).
 */
export async function up(db: Kysely<any>, dialect: MigrationDialect): Promise<void> {
  if (dialect !== 'postgres') return
  await sql
    .raw(
      `create or replace function sms_segments(message text) returns integer
language plpgsql immutable strict parallel safe as $function$
declare
  -- Of the text not yet in a part: septets (GSM-7) or UTF-16 units (UCS-2).
  units integer := length(message);
  -- The characters that take two units: extension characters or surrogate pairs.
  wide text;
  per_part integer;
  rest text := message;
  head text;
  parts integer := 0;
  fit integer;
  used integer;
begin
  -- GSM-7, basic table only: a septet a character, 160 in one part, else 153 a part.
  if message ~ '^[${BASIC}]*$' then
    return case when units = 0 then 0 when units <= 160 then 1 else (units + 152) / 153 end;
  end if;
  if message ~ '^[${BASIC}${EXTENSION}]*$' then
    wide := '[${EXTENSION}]';
    units := units + length(message) - length(regexp_replace(message, wide, '', 'g'));
    if units <= 160 then
      return 1;
    end if;
    per_part := 153;
  elsif message !~ '[${ASTRAL}]' then
    -- UCS-2 within the BMP: a unit a character, 70 in one part, else 67 a part.
    return case when units <= 70 then 1 else (units + 66) / 67 end;
  else
    wide := '[${ASTRAL}]';
    units := units + length(message) - length(regexp_replace(message, wide, '', 'g'));
    if units <= 70 then
      return 1;
    end if;
    per_part := 67;
  end if;
  -- A part at a time, as analyzeSms packs them: it takes characters while they fit, so
  -- a wide character that would straddle its end starts the next part. Walking the
  -- characters one by one would cost a statement each; the wide ones are counted instead.
  loop
    parts := parts + 1;
    exit when units <= per_part;
    -- Characters that surely fit: per_part of them less one for each wide one among them.
    head := left(rest, per_part);
    fit := per_part - (length(head) - length(regexp_replace(head, wide, '', 'g')));
    -- While two units or more are left in the part, half as many characters fit as well.
    loop
      head := left(rest, fit);
      used := fit + length(head) - length(regexp_replace(head, wide, '', 'g'));
      exit when per_part - used < 2;
      fit := fit + (per_part - used) / 2;
    end loop;
    -- The one unit left takes the next character if it is not a wide one.
    if used < per_part and substr(rest, fit + 1, 1) !~ wide then
      fit := fit + 1;
      used := used + 1;
    end if;
    rest := substr(rest, fit + 1);
    units := units - used;
  end loop;
  return parts;
end
$function$`,
    )
    .execute(db)
}
