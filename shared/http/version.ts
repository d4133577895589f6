/**
 * The server's release, the `version` of package.json (test/http/openapi-doc.test.ts keeps
 * the two equal). Not imported from package.json: the Lambda bundle would then carry the
 * whole file, the embedded server's dependency names and all.
 */
export const SERVER_VERSION = '0.1.0';
