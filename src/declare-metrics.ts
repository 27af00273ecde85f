/** Declares prom-client metrics on one registry, a metric a call: its name, then its help, label names and buckets. */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

/** What prom-client's configuration of a metric holds besides its name and registry. */
interface Declaration<L extends string> {
  help: string;
  /** Kept as literal types: `inc`, `set` and `observe` take these labels only (none when left out). */
  labelNames?: readonly L[];
}

/** The counter, gauge and histogram builders of `registry`. */
export function declareMetrics(registry: Registry) {
  const registers = [registry];
  return {
    counter: <const L extends string = never>(name: string, declared: Declaration<L>) =>
      new Counter<L>({ name, ...declared, registers }),
    /** `collect`, when given, refills the gauge at each scrape (prom-client calls it with the gauge as `this`). */
    gauge: <const L extends string = never>(
      name: string,
      declared: Declaration<L> & { collect?: (this: Gauge<L>) => void },
    ) => new Gauge<L>({ name, ...declared, registers }),
    histogram: <const L extends string = never>(name: string, declared: Declaration<L> & { buckets: number[] }) =>
      new Histogram<L>({ name, ...declared, registers }),
  };
}

/**
 * The metrics the informers keep (InformerMetrics, src/kube/informers.ts), which the controller and the webhook
 * both declare: tenantgate_<component>_informer_restarts_total{resource}, …_informer_synced{resource} and
 * …_cache_objects{kind} (its help says whose cache it is).
 */
export function declareInformerMetrics(
  declare: ReturnType<typeof declareMetrics>,
  component: 'controller' | 'webhook',
  cacheHelp: string,
) {
  return {
    informerRestarts: declare.counter(`tenantgate_${component}_informer_restarts_total`, {
      help: 'Informer restarts after a list or watch error, by resource',
      labelNames: ['resource'],
    }),
    informerSynced: declare.gauge(`tenantgate_${component}_informer_synced`, {
      help: '1 once the informer of a resource has listed',
      labelNames: ['resource'],
    }),
    cacheObjects: declare.gauge(`tenantgate_${component}_cache_objects`, { help: cacheHelp, labelNames: ['kind'] }),
  };
}
