import { type AiModel, maskConf, maskActions, type AiTool } from '../ai/index.js';
import type { Bot } from '../bots/index.js';
import type { Conversation } from '../conversations/index.js';
import type { Application } from './entities/application.entity.js';
import type { DeveloperTask } from './entities/developer-task.entity.js';
import type { HardwareLog } from './entities/hardware-log.entity.js';
import type { Hardware } from './entities/hardware.entity.js';
import type { ApplicationView, DevBotView, DevConvView, DevModelView, DevToolView, HardwareLogView, HardwareView, TaskView } from './schemas.js';

const iso = (date: Date | null): string | null => date?.toISOString() ?? null;
const stamps = (e: { id: string; owner: { id: string }; createdAt: Date; updatedAt: Date }) => ({
  id: e.id,
  ownerId: e.owner.id,
  createdAt: e.createdAt.toISOString(),
  updatedAt: e.updatedAt.toISOString(),
});
const tokenInfo = (e: { tokenPrefix: string | null; tokenIssuedAt: Date | null }): HardwareView['token'] =>
  e.tokenPrefix && e.tokenIssuedAt ? { prefix: e.tokenPrefix, issuedAt: e.tokenIssuedAt.toISOString() } : null;
const stringOrNull = (value: unknown): string | null => (typeof value === 'string' ? value : null);

export const toHardwareView = (h: Hardware): HardwareView => ({
  ...stamps(h),
  name: h.name,
  description: h.description,
  config: h.config,
  status: h.status,
  lastSeenAt: iso(h.lastSeenAt),
  sim: { reported: h.simReported, reportedAt: iso(h.simReportedAt), synced: h.sim, syncedAt: iso(h.simSyncedAt) },
  token: tokenInfo(h),
});

export const toApplicationView = (a: Application): ApplicationView => ({
  ...stamps(a),
  name: a.name,
  description: a.description,
  config: a.config,
  token: tokenInfo(a),
});

export const toTaskView = (t: DeveloperTask): TaskView => ({ ...stamps(t), name: t.name, description: t.description, config: t.config });

export const toDevModelView = (m: AiModel): DevModelView => ({
  ...stamps(m),
  name: m.name,
  type: m.type ?? '',
  description: m.desc,
  // Secrets (encrypted at rest) are never answered: sealed values and `apiKey` show as the mask.
  config: maskConf(m.conf),
  service: m.service,
});

export const toDevToolView = (t: AiTool): DevToolView => ({
  ...stamps(t),
  name: t.name,
  description: t.desc,
  config: maskConf(t.conf),
  service: t.service,
  actions: maskActions(t.actions ?? []),
});

export const toDevBotView = (b: Bot): DevBotView => ({ ...stamps(b), name: b.name, description: stringOrNull(b.conf.desc), config: b.conf });

export const toDevConvView = (c: Conversation): DevConvView => ({
  ...stamps(c),
  title: stringOrNull(c.conf.title) ?? c.name,
  description: stringOrNull(c.conf.description),
  config: c.conf,
  botId: c.bot?.id ?? null,
  members: c.members,
});

export const toHardwareLogView = (log: HardwareLog): HardwareLogView => ({
  id: log.id,
  hardwareId: log.hardware.id,
  type: log.type,
  content: log.content,
  createdAt: log.createdAt.toISOString(),
});
