/**
 * Whether the Redis the broker stores tokens in keeps them. A refresh rotates the refresh token at
 * the provider; if Redis then loses the new pair (a restart without an append-only file, or an
 * eviction under memory pressure), that connection is gone for good: the user must authorize again.
 */
export interface RedisDurability {
  appendonly: string | undefined;
  /** RDB snapshot rules; '' when snapshots are off. */
  save: string | undefined;
  maxmemoryPolicy: string | undefined;
}

/** What an operator should fix, one sentence each; empty when tokens are safe. Pure. */
export function durabilityWarnings(settings: RedisDurability): string[] {
  const warnings: string[] = [];
  if (settings.appendonly !== 'yes') {
    warnings.push(
      settings.save
        ? 'Redis appendonly is off: a restart loses every token refreshed since the last RDB snapshot; set appendonly yes'
        : 'Redis keeps no data on disk (appendonly no, no save rules): a restart loses every connection; set appendonly yes',
    );
  }
  if (settings.maxmemoryPolicy !== undefined && settings.maxmemoryPolicy !== 'noeviction') {
    warnings.push(
      `Redis maxmemory-policy is ${settings.maxmemoryPolicy}: under memory pressure it evicts connection records (every one has a TTL); set maxmemory-policy noeviction`,
    );
  }
  return warnings;
}

export type DurabilityCheck =
  | { readable: true; settings: RedisDurability; warnings: string[] }
  | { readable: false; reason: string };

/**
 * Reads the settings with CONFIG GET. Managed Redis services often refuse or rename CONFIG: then
 * the broker cannot tell, and says so.
 */
export async function checkDurability(
  configGet: (names: string[]) => Promise<Record<string, string>>,
): Promise<DurabilityCheck> {
  let values: Record<string, string>;
  try {
    values = await configGet(['appendonly', 'save', 'maxmemory-policy']);
  } catch (error) {
    return { readable: false, reason: (error as Error).message };
  }
  const settings: RedisDurability = {
    appendonly: values.appendonly,
    save: values.save,
    maxmemoryPolicy: values['maxmemory-policy'],
  };
  return { readable: true, settings, warnings: durabilityWarnings(settings) };
}

/** CONFIG GET through a raw command: a RESP2 flat list of names and values, or a RESP3 map. */
export function configGetWith(send: (args: string[]) => Promise<unknown>) {
  return async (names: string[]): Promise<Record<string, string>> => {
    const reply = await send(['CONFIG', 'GET', ...names]);
    if (!Array.isArray(reply)) return reply as Record<string, string>;
    const values: Record<string, string> = {};
    for (let index = 0; index + 1 < reply.length; index += 2)
      values[String(reply[index])] = String(reply[index + 1]);
    return values;
  };
}
