import { aws } from './backends.js';
import { validateOn } from './validation-suite.js';

validateOn(aws);
