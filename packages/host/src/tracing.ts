import { createRequire } from 'node:module';
import { context, propagation, trace } from '@opentelemetry/api';
import type { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import type { registerInstrumentations } from '@opentelemetry/instrumentation';
import type { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import type { resourceFromAttributes } from '@opentelemetry/resources';
import type {
  BatchSpanProcessor,
  ConsoleSpanExporter,
  NodeTracerProvider,
  ParentBasedSampler,
  SimpleSpanProcessor,
  SpanExporter,
  TraceIdRatioBasedSampler,
} from '@opentelemetry/sdk-trace-node';
import type { Kernel } from '@trellis/core';

/**
 * The OpenTelemetry SDK (some 370 modules with its OTLP exporter and protobufjs) is required when
 * tracing is installed, not when the package is imported: tracing is off by default, and every
 * `trellis` command imports this package. (The SDK's packages are CommonJS either way.)
 */
const require = createRequire(import.meta.url);
interface Sdk {
  OTLPTraceExporter: typeof OTLPTraceExporter;
  registerInstrumentations: typeof registerInstrumentations;
  UndiciInstrumentation: typeof UndiciInstrumentation;
  resourceFromAttributes: typeof resourceFromAttributes;
  BatchSpanProcessor: typeof BatchSpanProcessor;
  ConsoleSpanExporter: typeof ConsoleSpanExporter;
  NodeTracerProvider: typeof NodeTracerProvider;
  ParentBasedSampler: typeof ParentBasedSampler;
  SimpleSpanProcessor: typeof SimpleSpanProcessor;
  TraceIdRatioBasedSampler: typeof TraceIdRatioBasedSampler;
}
let loaded: Sdk | undefined;
const sdk = (): Sdk =>
  (loaded ??= {
    ...(require('@opentelemetry/exporter-trace-otlp-http') as Pick<Sdk, 'OTLPTraceExporter'>),
    ...(require('@opentelemetry/instrumentation') as Pick<Sdk, 'registerInstrumentations'>),
    ...(require('@opentelemetry/instrumentation-undici') as Pick<Sdk, 'UndiciInstrumentation'>),
    ...(require('@opentelemetry/resources') as Pick<Sdk, 'resourceFromAttributes'>),
    ...(require('@opentelemetry/sdk-trace-node') as Pick<Sdk, 'BatchSpanProcessor' | 'ConsoleSpanExporter' | 'NodeTracerProvider' | 'ParentBasedSampler' | 'SimpleSpanProcessor' | 'TraceIdRatioBasedSampler'>),
  });

export interface TracingOptions {
  serviceName: string;
  /** Share of new root traces recorded; a sampled-in or -out incoming `traceparent` is followed. */
  sampleRatio?: number;
  exporter: SpanExporter;
  /** Batch spans before export (production); otherwise each span is exported when it ends. */
  batch?: boolean;
  /**
   * Trace outbound `fetch` calls (AI providers, Stripe, webhooks: every SDK on Node's fetch) as
   * client spans and send `traceparent` with them. Default true.
   */
  outbound?: boolean;
}

export interface InstalledTracing {
  /** Flushes pending spans and removes the global tracer provider, propagator and context manager. */
  shutdown(): Promise<void>;
}

/**
 * Installs the OpenTelemetry SDK for this process: a tracer provider with the given exporter, the
 * W3C trace-context propagator and the AsyncLocalStorage context manager, so that the spans the
 * core opens through `@opentelemetry/api` are recorded and an incoming `traceparent` is continued;
 * and the undici instrumentation, so outbound `fetch` calls carry the trace on.
 */
export function installTracing(options: TracingOptions): InstalledTracing {
  const { BatchSpanProcessor, NodeTracerProvider, ParentBasedSampler, registerInstrumentations, resourceFromAttributes, SimpleSpanProcessor, TraceIdRatioBasedSampler, UndiciInstrumentation } = sdk();
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ 'service.name': options.serviceName }),
    sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(options.sampleRatio ?? 1) }),
    spanProcessors: [options.batch ? new BatchSpanProcessor(options.exporter) : new SimpleSpanProcessor(options.exporter)],
  });
  provider.register();
  const uninstrument = options.outbound === false ? undefined : registerInstrumentations({ tracerProvider: provider, instrumentations: [new UndiciInstrumentation()] });
  return {
    async shutdown() {
      uninstrument?.();
      try {
        await provider.shutdown();
      } finally {
        trace.disable();
        propagation.disable();
        context.disable();
      }
    },
  };
}

/** The SDK as `tracing.*` configures it, or nothing when tracing is off. */
export function tracingFromConfig(config: Kernel['config']): InstalledTracing | undefined {
  const tracing = config.tracing;
  if (!tracing.enabled) return undefined;
  const { ConsoleSpanExporter, OTLPTraceExporter } = sdk();
  const exporter = tracing.exporter === 'console' ? new ConsoleSpanExporter() : new OTLPTraceExporter(tracing.endpoint ? { url: tracing.endpoint } : {});
  return installTracing({ serviceName: tracing.serviceName, sampleRatio: tracing.sampleRatio, exporter, batch: tracing.exporter === 'otlp' });
}
