/**
 * The resources this service serves. Adding one is: write its module, list it
 * here. Routes, shard dispatch and persistence all follow from this list.
 */
import type { Kind } from '../store/kinds.js';
import type { ResourceModel } from './model.js';
import { siteModel } from './site.js';
import { changeModel } from './change.js';
import { attributeModel } from './attribute.js';
import { valueModel } from './value.js';
import { deviceModel } from './device.js';
import { networkModel } from './network.js';
import { interfaceModel } from './interface.js';
import { circuitModel } from './circuit.js';
import { protocolTypeModel } from './protocol-type.js';
import { protocolModel } from './protocol.js';

/** In load order: a kind's derived indexes may consult kinds listed before it. */
export const MODELS: ResourceModel<any, any>[] = [siteModel, attributeModel, deviceModel, networkModel, interfaceModel, circuitModel, protocolTypeModel, protocolModel, valueModel, changeModel];

const byCollection = new Map(MODELS.map((m) => [m.collection, m]));
const byKind = new Map(MODELS.map((m) => [m.kind, m]));

export function modelByCollection(collection: string): ResourceModel<any, any> | undefined { return byCollection.get(collection); }
export function modelByKind(kind: Kind): ResourceModel<any, any> {
  const m = byKind.get(kind);
  if (!m) throw new Error(`no model registered for kind ${kind}`);
  return m;
}

