import { AIMessage, HumanMessage, ToolMessage } from '@langchain/core/messages';
import {
  Annotation,
  END,
  interrupt,
  MessagesAnnotation,
  START,
  StateGraph,
} from '@langchain/langgraph';
import type { BaseCheckpointSaver } from '@langchain/langgraph-checkpoint';

/**
 * A small agent graph with a human in the loop, for the copy/resume specs and the console's
 * browser tests: `agent` asks for a refund tool call, `approve` interrupts with a question,
 * `refund` answers the tool call with the decision, `reply` closes the chat.
 *   START → agent → approve (interrupt) → refund → reply → END
 */
export const REFUND_QUESTION = { question: 'Refund 5 EUR to order 4711?', amount: 5 };

export const refundGraph = (checkpointer: BaseCheckpointSaver) => {
  const State = Annotation.Root({
    ...MessagesAnnotation.spec,
    approved: Annotation<boolean | undefined>(),
  });
  return new StateGraph(State)
    .addNode('agent', () => ({
      messages: [
        new AIMessage({
          content: 'I can refund that. Asking for approval first.',
          tool_calls: [{ id: 'call-1', name: 'refund', args: { order: 4711, eur: 5 } }],
        }),
      ],
    }))
    .addNode('approve', () => ({ approved: interrupt(REFUND_QUESTION) === 'yes' }))
    .addNode('refund', (s) => ({
      messages: [
        new ToolMessage({
          tool_call_id: 'call-1',
          content: s.approved ? 'refunded 5 EUR' : 'refund declined',
        }),
      ],
    }))
    .addNode('reply', (s) => ({
      messages: [new AIMessage(s.approved ? 'Done: 5 EUR are on their way.' : 'No refund made.')],
    }))
    .addEdge(START, 'agent')
    .addEdge('agent', 'approve')
    .addEdge('approve', 'refund')
    .addEdge('refund', 'reply')
    .addEdge('reply', END)
    .compile({ checkpointer });
};

export const refundInput = () => ({ messages: [new HumanMessage('Please refund order 4711')] });
