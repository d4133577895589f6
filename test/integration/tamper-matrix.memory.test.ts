import { tamperMatrixOn } from '../support/tamper-matrix-suite.js';

/** The tamper matrix (test/support/tamper-matrix-suite.ts) on the memory stores. */
tamperMatrixOn('memory');
