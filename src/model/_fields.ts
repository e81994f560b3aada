/**
 * Field schemas several resources share. They live apart from any resource
 * module so that resources which refer to each other (devices and their
 * interfaces) can both use them while their modules are still loading.
 */
import { Type } from '@sinclair/typebox';
import { Field } from '../schema/fields.js';

export const attributesField = (requiredOn: ('POST' | 'PUT')[]) => Field.json(
  Type.Record(Type.String(), Type.Union([Type.String(), Type.Array(Type.String())])),
  { requiredOn, help: 'Dictionary of attributes to set.' },
);

export const siteIdField = () => Field.integer({ requiredOn: ['POST'], createOnly: true, help: 'Unique ID of the Site this object is under.' });
