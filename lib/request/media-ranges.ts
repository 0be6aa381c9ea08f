// Reading an Accept or a Content-Type header: its media ranges, each a type with its q and whether it asks for a
// transformed form (`as=`: a Table or metadata form), ordered as kube-apiserver's goautoneg orders them. The one
// parser of these headers; negotiation.ts and yaml-answer.ts decide what to answer from it.

export interface MediaRange {
  /** Lower case, without parameters. */
  type: string;
  q: number;
  /** A Table or metadata form (`as=`): not the plain object of its encoding. */
  transformed: boolean;
  /** 0 for a type and subtype, 1 for `type/*`, 2 for `*\/*`: goautoneg orders the more specific first at equal q. */
  wildness: number;
  order: number;
}

/** One media range of an Accept or a Content-Type: its type, lower case, without parameters. */
export function mediaTypeOf(part: string): string {
  const semicolon = part.indexOf(';');
  return (semicolon === -1 ? part : part.slice(0, semicolon)).trim().toLowerCase();
}

/** The ranges of an Accept a client would take (q above 0), most preferred first: by q, then specificity, then order. */
export function mediaRanges(accept: string): MediaRange[] {
  const ranges: MediaRange[] = [];
  accept.split(',').forEach((part, order) => {
    const type = mediaTypeOf(part);
    if (type === '') return;
    let q = 1;
    let transformed = false;
    for (const parameter of part.split(';').slice(1)) {
      const [name, value = ''] = parameter.split('=').map((piece) => piece.trim());
      if (name === 'q') q = Number.parseFloat(value);
      else if (name === 'as') transformed = true;
    }
    if (!(q > 0)) return;
    ranges.push({ type, q, transformed, wildness: type === '*/*' ? 2 : type.endsWith('/*') ? 1 : 0, order });
  });
  return ranges.sort((a, b) => b.q - a.q || a.wildness - b.wildness || a.order - b.order);
}
