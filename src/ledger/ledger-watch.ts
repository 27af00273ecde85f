/**
 * One watch on the headroom ledgers' ConfigMaps (docs/adr/0003-headroom-ledger.md). It
 * starts from the collection's current resourceVersion (a list of at most one object, so 10,000
 * ledgers are not replayed), resumes from the last version it saw when the stream ends, starts afresh
 * after a 410 Gone, and retries failures with backoff (0.5 s doubling up to 30 s), forever. Nothing
 * depends on it for safety: a write it misses only makes the next compare-and-swap of that project
 * lose once and read again.
 *
 * Every ledger write reaches every replica, the writer's own included, and a busy project's ledger is
 * 10–160 KiB. So an event is not parsed when it arrives: its type, name and resourceVersion are read
 * from the head of the line (eventHead), and the ConfigMap is parsed only if a listener asks for it
 * (a replica asks only for a project it has cached, at a version newer than its own; ADR 0003).
 */
import type { LeanApiClient, LineStream } from '../kube/lean-client.js';
import { describeError } from '../kube/errors.js';
import { LineStreamIdle } from '../kube/lean-client.js';

/** A ledger ConfigMap as the API serves it (ledger.ts reads and writes it). */
export interface ConfigMapJson {
  apiVersion: 'v1';
  kind: 'ConfigMap';
  metadata: {
    name: string;
    namespace: string;
    labels?: Record<string, string>;
    resourceVersion?: string;
    finalizers?: string[];
    deletionTimestamp?: string;
  };
  data?: Record<string, string>;
}

/** The ledger ConfigMaps' labels (ConfigMapLedger writes both). */
const LEDGER_SELECTOR = 'app.kubernetes.io/managed-by=tenantgate,tenantgate.io/project';

const BASE_DELAY_MS = 500;
const MAX_DELAY_MS = 30_000;
/** The apiserver ends each watch after this long (a fresh one resumes at once); as client-go, 5–10 min. */
const WATCH_MIN_SECONDS = 300;
/** A stream silent this much longer than its own timeout is a dead connection. */
const IDLE_GRACE_MS = 30_000;

type LedgerEventType = 'ADDED' | 'MODIFIED' | 'DELETED';

/** A ledger write or deletion seen on the watch; the ConfigMap is parsed only when asked for. */
export interface LedgerEvent {
  type: LedgerEventType;
  name: string;
  resourceVersion: string;
  /** The ConfigMap (parsed on the first call, then kept); undefined when the line is not one. */
  object(): ConfigMapJson | undefined;
  /** Whether the event's line holds `text` as it came (a look for a marker without parsing). */
  holds(text: string): boolean;
}

/** What the head of a watch event line says, without parsing the object (undefined: read it whole). */
export interface EventHead {
  type: string;
  name: string;
  resourceVersion: string;
}

const TYPE_PREFIX = '{"type":"';
const METADATA = '"metadata":{';

/** The string value after `key` (e.g. `"name":"`) from `from`, up to the next quote; undefined if absent or escaped. */
function stringAfter(line: string, key: string, from: number): string | undefined {
  const at = line.indexOf(key, from);
  if (at < 0) return undefined;
  const begin = at + key.length;
  const end = line.indexOf('"', begin);
  if (end < 0) return undefined;
  const value = line.slice(begin, end);
  // Names and versions never hold a backslash; one means an escaped quote: read the line whole.
  return value.includes('\\') ? undefined : value;
}

/**
 * The type, metadata.name and metadata.resourceVersion of a watch event line as the apiserver writes
 * it (`{"type":"MODIFIED","object":{"kind":…,"metadata":{"name":…,"resourceVersion":…`): keys inside a
 * JSON string value are escaped, so the first unescaped `"name":"` and `"resourceVersion":"` after
 * `"metadata":{` are the object's own. Undefined when the line does not look like that.
 */
export function eventHead(line: string): EventHead | undefined {
  if (!line.startsWith(TYPE_PREFIX)) return undefined;
  const typeEnd = line.indexOf('"', TYPE_PREFIX.length);
  if (typeEnd < 0) return undefined;
  const type = line.slice(TYPE_PREFIX.length, typeEnd);
  const metadata = line.indexOf(METADATA, typeEnd);
  if (metadata < 0) return undefined;
  const name = stringAfter(line, '"name":"', metadata);
  const resourceVersion = stringAfter(line, '"resourceVersion":"', metadata);
  if (!name || !resourceVersion || !/^[0-9]+$/.test(resourceVersion)) return undefined;
  return { type, name, resourceVersion };
}

/** A watch event line as JSON: an ERROR's object is a Status (its `code`), any other a ConfigMap. */
type ParsedEvent = {
  type?: string;
  object?: { code?: number; metadata?: { name?: string; resourceVersion?: string } };
};

function parseLine(line: string): ParsedEvent | undefined {
  try {
    return JSON.parse(line) as ParsedEvent;
  } catch {
    return undefined;
  }
}

const isLedgerEventType = (type: string | undefined): type is LedgerEventType =>
  type === 'ADDED' || type === 'MODIFIED' || type === 'DELETED';

export class LedgerWatch {
  private readonly listeners: Array<(event: LedgerEvent) => void> = [];
  private stream: LineStream | undefined;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private delayMs = BASE_DELAY_MS;
  private stopped = false;
  private begun = 0;

  constructor(
    private readonly api: LeanApiClient,
    /** The ConfigMaps' collection path in tenantgate's namespace. */
    private readonly path: string,
    private readonly log: (message: string) => void,
    /** How long the apiserver keeps each watch open (tests shorten it); default 5–10 min, random. */
    private readonly watchSeconds?: number,
  ) {
    void this.run(undefined);
  }

  listen(listener: (event: LedgerEvent) => void): void {
    this.listeners.push(listener);
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.stream?.abort();
  }

  /** Watches from `from`, or from the collection's current version when undefined. */
  private async run(from: string | undefined): Promise<void> {
    if (this.stopped) return;
    try {
      const start = from ?? (await this.currentVersion());
      let last = start;
      let gone = false;
      const began = Date.now();
      const timeoutSeconds = this.watchSeconds ?? WATCH_MIN_SECONDS + Math.floor(Math.random() * WATCH_MIN_SECONDS);
      const query = new URLSearchParams({
        watch: '1',
        labelSelector: LEDGER_SELECTOR,
        allowWatchBookmarks: 'true',
        timeoutSeconds: String(timeoutSeconds),
        ...(start ? { resourceVersion: start } : {}),
      });
      const onLine = (line: string) => {
        const head = eventHead(line);
        if (!head || head.type === 'ERROR' || head.type === 'BOOKMARK') {
          // Small or unexpected: read it whole.
          const event = parseLine(line);
          if (!event) return;
          if (event.type === 'ERROR') return void (gone ||= event.object?.code === 410);
          const version = event.object?.metadata?.resourceVersion;
          if (version) last = version;
          const name = event.object?.metadata?.name;
          if (!version || !name || !isLedgerEventType(event.type)) return;
          return this.deliver({
            type: event.type,
            name,
            resourceVersion: version,
            object: () => event.object as ConfigMapJson,
            holds: (text) => line.includes(text),
          });
        }
        last = head.resourceVersion;
        if (!isLedgerEventType(head.type)) return;
        let parsed: ConfigMapJson | undefined | null = null;
        this.deliver({
          type: head.type,
          name: head.name,
          resourceVersion: head.resourceVersion,
          object: () => {
            if (parsed === null) parsed = parseLine(line)?.object as ConfigMapJson | undefined;
            return parsed;
          },
          holds: (text) => line.includes(text),
        });
      };
      this.begun += 1;
      const stream = await this.api.lines(
        `${this.path}?${query.toString()}`,
        onLine,
        timeoutSeconds * 1000 + IDLE_GRACE_MS,
      );
      if (this.stopped) return stream.abort();
      this.stream = stream;
      stream.ended.then(
        () => {
          if (this.stopped) return;
          // The apiserver closed the stream (its timeout), or the version is too old (410): go on, at
          // once after a long watch, with backoff after one that ended at once.
          this.schedule(gone ? undefined : last, gone || Date.now() - began < 1000 ? this.nextDelay() : 0);
        },
        (err: unknown) => {
          if (this.stopped) return;
          if (err instanceof LineStreamIdle)
            return this.retry(`the ledger watch went silent: ${describeError(err)}`, last);
          this.retry(`the ledger watch ended: ${describeError(err)}`, last);
        },
      );
    } catch (err) {
      this.retry(`the ledger watch could not start: ${describeError(err)}`, undefined);
    }
  }

  /** Watches begun so far (the first, and every resumption or restart). */
  get watchesBegun(): number {
    return this.begun;
  }

  private deliver(event: LedgerEvent): void {
    this.delayMs = BASE_DELAY_MS;
    for (const listener of this.listeners) listener(event);
  }

  private async currentVersion(): Promise<string | undefined> {
    const list = await this.api.call<{ metadata?: { resourceVersion?: string } }>(
      'GET',
      `${this.path}?labelSelector=${encodeURIComponent(LEDGER_SELECTOR)}&limit=1`,
    );
    return list.metadata?.resourceVersion;
  }

  /** After a failure: from `from` (resumed; a 410 then starts afresh) after the next backoff delay. */
  private retry(reason: string, from: string | undefined): void {
    const delay = this.nextDelay();
    this.log(
      `${reason}; retrying in ${delay} ms (until then each replica learns of the others' ledger writes from a ` +
        `lost compare-and-swap)`,
    );
    this.schedule(from, delay);
  }

  private nextDelay(): number {
    const delay = this.delayMs;
    this.delayMs = Math.min(this.delayMs * 2, MAX_DELAY_MS);
    return delay;
  }

  private schedule(from: string | undefined, delayMs: number): void {
    if (this.stopped || this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.run(from);
    }, delayMs);
  }
}
