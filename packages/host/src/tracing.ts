import { context, propagation, trace } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { registerInstrumentations } from '@opentelemetry/instrumentation';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  BatchSpanProcessor,
  ConsoleSpanExporter,
  NodeTracerProvider,
  ParentBasedSampler,
  SimpleSpanProcessor,
  TraceIdRatioBasedSampler,
  type SpanExporter,
} from '@opentelemetry/sdk-trace-node';
import type { Kernel } from '@trellis/core';

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
  const exporter = tracing.exporter === 'console' ? new ConsoleSpanExporter() : new OTLPTraceExporter(tracing.endpoint ? { url: tracing.endpoint } : {});
  return installTracing({ serviceName: tracing.serviceName, sampleRatio: tracing.sampleRatio, exporter, batch: tracing.exporter === 'otlp' });
}
