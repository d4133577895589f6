/**
 * `@hefesto/langgraph`: the LangGraph checkpointer on Hefesto.
 *
 * The saver (`HefestoSaver`, a BaseCheckpointSaver from `@langchain/langgraph-checkpoint`)
 * is not written yet; this entry exports nothing until it is, so that nobody builds on a
 * stand-in. It exists so that the package's build, pack and install already run end to end
 * (`scripts/pack.ts`, test/packages/install.test.ts). Import the SDK from `@hefesto/client`
 * here: the build resolves it to the client package's own types (tsconfig.build.json
 * `paths`), so the saver is compiled against what users install, not the repository's files.
 */

export {};
