import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Context, type Span, type TextMapGetter, type Tracer } from '@opentelemetry/api';

/**
 * The core speaks only `@opentelemetry/api`: without an SDK installed every call here is a no-op.
 * The reference host installs one when `tracing.enabled` is set; an embedding app may install its own.
 */
export const tracerName = '@trellis/core';

export function tracer(): Tracer {
  return trace.getTracer(tracerName);
}

const headerGetter: TextMapGetter<Record<string, string>> = {
  keys: (carrier) => Object.keys(carrier),
  get: (carrier, key) => carrier[key.toLowerCase()],
};

/** The context an incoming request continues: its W3C `traceparent`/`tracestate`, if any. */
export function extractContext(headers: Record<string, string>): Context {
  return propagation.extract(ROOT_CONTEXT, headers, headerGetter);
}

/**
 * Adds `traceparent` (and `tracestate`) for the active span to outgoing request headers, so a
 * downstream service continues the trace. Use it wherever Trellis calls out over HTTP.
 */
export function injectTraceHeaders(headers: Record<string, string> = {}): Record<string, string> {
  propagation.inject(context.active(), headers);
  return headers;
}

/**
 * Runs `work` inside a span that is the child of the active one; the span records an exception
 * and error status when `work` throws.
 */
export async function withSpan<T>(name: string, attributes: Record<string, string | number | boolean>, work: (span: Span) => Promise<T>, kind: SpanKind = SpanKind.INTERNAL): Promise<T> {
  const span = tracer().startSpan(name, { kind, attributes });
  try {
    return await context.with(trace.setSpan(context.active(), span), () => work(span));
  } catch (error) {
    span.recordException(error as Error);
    span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error)?.message });
    throw error;
  } finally {
    span.end();
  }
}

export { context, SpanKind, SpanStatusCode, trace };
