/**
 * A small DOM builder: `h('button', { class: 'x', onclick }, 'Save')`. Attributes that start
 * with `on` become listeners; `null`/`undefined`/`false` children and attributes are skipped.
 */

type Child = Node | string | number | null | undefined | false;
type Children = Child | Children[];
type Attributes = Record<string, string | number | boolean | null | undefined | EventListener>;

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attributes: Attributes = {},
  ...children: Children[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === null || value === undefined || value === false) continue;
    if (typeof value === 'function') element.addEventListener(name.slice(2), value);
    else element.setAttribute(name, value === true ? '' : String(value));
  }
  append(element, children);
  return element;
}

function append(parent: Node, children: Children[]): void {
  for (const child of children) {
    if (Array.isArray(child)) append(parent, child);
    else if (child !== null && child !== undefined && child !== false) {
      parent.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
    }
  }
}

/** Replaces an element's children. */
export function mount(parent: Element, ...children: Children[]): void {
  parent.replaceChildren();
  append(parent, children);
}

/** The element with `id`; a missing one is a broken `index.html`, not a runtime condition. */
export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const element = document.getElementById(id);
  if (element === null) throw new Error(`index.html lacks #${id}`);
  return element as T;
}

/** `12:04:31` in local time. */
export function clock(ms: number | undefined): string {
  return ms === undefined ? '' : new Date(ms).toLocaleTimeString([], { hour12: false });
}

/** `in 2.4 s`, `3 s ago`, `now`. */
export function relative(ms: number | undefined, now = Date.now()): string {
  if (ms === undefined) return '';
  const delta = (ms - now) / 1000;
  if (Math.abs(delta) < 0.5) return 'now';
  const text = Math.abs(delta) < 10 ? Math.abs(delta).toFixed(1) : Math.round(Math.abs(delta));
  return delta > 0 ? `in ${text} s` : `${text} s ago`;
}

/** The last `n` characters of an id, enough to tell rows apart on screen. */
export function short(id: string | undefined, n = 6): string {
  if (id === undefined) return '';
  const bare = id.startsWith('pending:') ? id.slice(8) : id;
  return bare.length <= n ? bare : `…${bare.slice(-n)}`;
}

/** A `<time>` that {@link tickRelativeTimes} keeps current (`in 2.4 s`). */
export function relativeTime(ms: number): HTMLTimeElement {
  return h('time', { 'data-relative': String(ms), title: clock(ms) }, relative(ms));
}

/** Refreshes every relative time on the page without redrawing anything else. */
export function tickRelativeTimes(): void {
  const now = Date.now();
  for (const element of document.querySelectorAll<HTMLElement>('[data-relative]')) {
    element.textContent = relative(Number(element.dataset.relative), now);
  }
}
