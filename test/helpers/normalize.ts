// Makes two API answers comparable: drops what differs between any two objects (uids, versions, times)
// and replaces the names a scenario chose with placeholders.
const VOLATILE_METADATA = ['uid', 'resourceVersion', 'creationTimestamp', 'generation', 'managedFields', 'selfLink'];

export function normalize(value: unknown, replacements: [string, string][] = []): unknown {
  let text = JSON.stringify(value, (key, v) => {
    if (key === 'metadata' && v !== null && typeof v === 'object') {
      const copy = { ...(v as Record<string, unknown>) };
      for (const field of VOLATILE_METADATA) delete copy[field];
      const annotations = copy.annotations as Record<string, string> | undefined;
      if (annotations !== undefined) {
        const kept = Object.fromEntries(Object.entries(annotations).filter(([k]) => k !== 'deployment.kubernetes.io/revision'));
        copy.annotations = Object.keys(kept).length === 0 ? undefined : kept;
      }
      return copy;
    }
    if (key === 'status' && v !== null && typeof v === 'object' && !Array.isArray(v)) return undefined;
    if (key === 'resourceVersion' || key === 'uid' || key === 'continue') return undefined;
    return v;
  });
  if (text === undefined) return undefined;
  for (const [from, to] of replacements) text = text.replaceAll(from, to);
  return JSON.parse(text);
}

/** Splits concatenated JSON documents (as `kubectl get -w -o json` prints them) into parsed values. */
export function parseJsonStream(text: string): unknown[] {
  const values: unknown[] = [];
  let depth = 0;
  let inString = false;
  let start = -1;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
      continue;
    }
    if (c === '"') inString = true;
    else if (c === '{' || c === '[') {
      if (depth++ === 0) start = i;
    } else if ((c === '}' || c === ']') && --depth === 0) {
      values.push(JSON.parse(text.slice(start, i + 1)));
    }
  }
  return values;
}

/** Drops consecutive repeats: controllers' status updates add MODIFIED events at times no test controls. */
export function withoutRepeats<T>(items: T[]): T[] {
  return items.filter((item, i) => i === 0 || item !== items[i - 1]);
}
