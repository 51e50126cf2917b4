/**
 * The one scheduler of a simulation run (SPEC §20). Every port call — a store transaction, an
 * answer on the wire, the auth hook, a timer — becomes a pending step here, and nothing resumes
 * until the run picks that step. Time is virtual: it moves only when the run says so, and timers
 * (`setTimeout` while a run is installed) fire as steps at their virtual due time.
 */

/** What a step returns: a note appended to its trace line, or nothing. */
export type StepNote = string | undefined;

/** One pending resumption. */
export interface Step {
  readonly id: number;
  /** Who it belongs to: a holder's steps die with it. */
  readonly actor: string;
  readonly label: string;
  /** Virtual time from which it may run. */
  readonly readyAt: number;
  readonly timer: boolean;
  /** Runs the step; what it returns is appended to its trace line (its result). */
  run(): StepNote | Promise<StepNote>;
}

type TimerFn = (...args: unknown[]) => void;

/** Lets every continuation that can run, run: microtasks first, then one macrotask turn. */
export function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

export class Scheduler {
  /** Virtual time (ms), the same for every holder; each holder's clock adds its own offset. */
  now: number;
  readonly start: number;
  readonly trace: string[] = [];
  readonly #steps = new Map<number, Step>();
  readonly #dead = new Set<string>();
  #nextId = 1;
  #saved: { setTimeout: typeof setTimeout; clearTimeout: typeof clearTimeout } | undefined;

  constructor(start: number) {
    this.now = start;
    this.start = start;
  }

  /** Queues a step; a step of a dead actor is dropped at once (its promise never resolves). */
  add(actor: string, label: string, run: () => StepNote | Promise<StepNote>, delay = 0): number {
    const id = this.#nextId++;
    if (this.#dead.has(actor)) return id;
    this.#steps.set(id, { id, actor, label, readyAt: this.now + delay, timer: false, run });
    return id;
  }

  cancel(id: number): void {
    this.#steps.delete(id);
  }

  /** When a pending step becomes ready, if it is still pending. */
  due(id: number): number | undefined {
    return this.#steps.get(id)?.readyAt;
  }

  has(id: number): boolean {
    return this.#steps.has(id);
  }

  /** Drops every step of an actor and every step it would queue from now on. */
  kill(actor: string): void {
    this.#dead.add(actor);
    for (const [id, step] of this.#steps) if (step.actor === actor) this.#steps.delete(id);
  }

  isDead(actor: string): boolean {
    return this.#dead.has(actor);
  }

  /** Steps that may run now, in the order they were queued. */
  ready(): Step[] {
    const out: Step[] = [];
    for (const step of this.#steps.values()) if (step.readyAt <= this.now) out.push(step);
    return out;
  }

  /** The earliest virtual time at which a waiting step becomes ready, if any. */
  nextDue(): number | undefined {
    let due: number | undefined;
    for (const step of this.#steps.values()) {
      if (step.readyAt > this.now && (due === undefined || step.readyAt < due)) due = step.readyAt;
    }
    return due;
  }

  get size(): number {
    return this.#steps.size;
  }

  /** Pending steps of one actor (for the quiescence check). */
  pendingOf(actor: string): number {
    let n = 0;
    for (const step of this.#steps.values()) if (step.actor === actor) n++;
    return n;
  }

  /** Runs one picked step and lets its continuations run until they wait on the next step. */
  async execute(step: Step): Promise<void> {
    this.#steps.delete(step.id);
    const note = await step.run();
    this.trace.push(`${this.now - this.start} ${step.label}${note ?? ''}`);
    await settle();
  }

  /** Records a line in the trace (an app op, a time jump, a fault switch). */
  log(line: string): void {
    this.trace.push(`${this.now - this.start} ${line}`);
  }

  /** Routes `setTimeout`/`clearTimeout` to virtual time for the length of a run. */
  install(): void {
    if (this.#saved) return;
    this.#saved = { setTimeout: globalThis.setTimeout, clearTimeout: globalThis.clearTimeout };
    const virtualSetTimeout = (fn: TimerFn, ms?: number, ...args: unknown[]) => {
      const id = this.#nextId++;
      const delay = Math.max(0, Number(ms) || 0);
      this.#steps.set(id, {
        id,
        actor: 'timer',
        label: `timer ${delay}ms fires`,
        readyAt: this.now + delay,
        timer: true,
        run: () => {
          fn(...args);
          return undefined;
        },
      });
      return id;
    };
    globalThis.setTimeout = virtualSetTimeout as unknown as typeof setTimeout;
    globalThis.clearTimeout = ((id: number) => {
      const step = this.#steps.get(id);
      if (step?.timer) this.#steps.delete(id);
    }) as unknown as typeof clearTimeout;
  }

  uninstall(): void {
    if (!this.#saved) return;
    globalThis.setTimeout = this.#saved.setTimeout;
    globalThis.clearTimeout = this.#saved.clearTimeout;
    this.#saved = undefined;
  }
}
