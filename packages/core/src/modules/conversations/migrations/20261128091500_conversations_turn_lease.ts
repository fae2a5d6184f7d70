import type { MigrationDefinition } from '../../../ports/database.js';

/** The lease of a streaming assistant message, so that a turn cut by a crash is found and closed. */
export const migration: MigrationDefinition = {
  name: '20261128091500_conversations_turn_lease',
  up: {
    sqlite: [
      "alter table `messages` add column `heartbeat_at` datetime null",
      "create index `messages_status_heartbeat_at_index` on `messages` (`status`, `heartbeat_at`)",
    ],
    postgresql: [
      "alter table \"messages\" add column \"heartbeat_at\" timestamptz null",
      "create index \"messages_status_heartbeat_at_index\" on \"messages\" (\"status\", \"heartbeat_at\")",
    ],
  },
  down: {
    sqlite: [
      "drop index if exists `messages_status_heartbeat_at_index`",
      "alter table `messages` drop column `heartbeat_at`",
    ],
    postgresql: [
      "drop index if exists \"messages_status_heartbeat_at_index\"",
      "alter table \"messages\" drop column \"heartbeat_at\"",
    ],
  },
};
