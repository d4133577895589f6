import { embedded } from './backends.js';
import { validateOn } from './validation-suite.js';

validateOn(embedded);
