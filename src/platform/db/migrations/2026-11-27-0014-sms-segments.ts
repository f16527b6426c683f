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
 * texts can be counted where they are rendered. Most texts take one regular expression
 * and arithmetic; only GSM-7 texts with extension characters and UCS-2 texts with
 * characters outside the BMP walk their characters, since there a part may end a unit
 * short (an escape or a surrogate pair is never split). Assumes a UTF8 database, where
 * length() counts code points. On SQLite the messaging module registers the same
 * function on every connection (sql-functions.ts).
 */
export async function up(db: Kysely<any>, dialect: MigrationDialect): Promise<void> {
  if (dialect !== 'postgres') return
  await sql
    .raw(
      `create or replace function sms_segments(message text) returns integer
language plpgsql immutable strict parallel safe as $function$
declare
  units integer := length(message);
  parts integer := 1;
  fill integer := 0;
  width integer;
  c text;
begin
  -- GSM-7, basic table only: a septet a character, 160 in one part, else 153 a part.
  if message ~ '^[${BASIC}]*$' then
    return case when units = 0 then 0 when units <= 160 then 1 else (units + 152) / 153 end;
  end if;
  if message ~ '^[${BASIC}${EXTENSION}]*$' then
    units := units + length(regexp_replace(message, '[^${EXTENSION}]', '', 'g'));
    if units <= 160 then
      return 1;
    end if;
    foreach c in array string_to_array(message, null) loop
      width := case when c ~ '[${EXTENSION}]' then 2 else 1 end;
      if fill + width > 153 then
        parts := parts + 1;
        fill := width;
      else
        fill := fill + width;
      end if;
    end loop;
    return parts;
  end if;
  -- UCS-2: a unit a character, 70 in one part, else 67 a part.
  if message !~ '[${ASTRAL}]' then
    return case when units <= 70 then 1 else (units + 66) / 67 end;
  end if;
  units := units + length(regexp_replace(message, '[^${ASTRAL}]', '', 'g'));
  if units <= 70 then
    return 1;
  end if;
  foreach c in array string_to_array(message, null) loop
    width := case when ascii(c) > 65535 then 2 else 1 end;
    if fill + width > 67 then
      parts := parts + 1;
      fill := width;
    else
      fill := fill + width;
    end if;
  end loop;
  return parts;
end
$function$`,
    )
    .execute(db)
}
