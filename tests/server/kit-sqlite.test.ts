import { defineKitConformance } from './kit-conformance.ts';
import { openTodoApp } from './kit-todo-app.ts';

defineKitConformance('SQLite (better-sqlite3, in memory)', () => openTodoApp({ kind: 'sqlite' }));
