package testbed.agent;

import net.bytebuddy.asm.Advice;
import net.bytebuddy.implementation.bytecode.assign.Assigner;

/** The code woven into a program's Kafka Streams (org.apache.kafka.streams.KafkaStreams and the internal StreamTask),
 * so that a team's own topology writes the history testbed's Streams application writes: state transitions, tasks,
 * restorations, and each input record once it went through the topology. Its main consumer is a KafkaConsumer, which
 * ConsumerAdvice records as any other (assigned, revoked, lost, commits), except that what its poll returns is not
 * processed until a task processed it.
 *
 * Like ConsumerAdvice, inlined into the program's classes and calling only StreamsRecorder with JDK types: no Kafka
 * Streams type is named here, so the agent needs no kafka-streams to build and serves any version the program has. */
final class StreamsAdvice {
    private StreamsAdvice() {}

    /** Every KafkaStreams constructor: the instance is registered (once) with its settings, and our restore listener
     * is installed, around the program's if it sets one later. */
    static final class Construct {
        @Advice.OnMethodExit
        static void exit(@Advice.This Object self) {
            StreamsRecorder.created(self);
        }
    }

    /** KafkaStreams.setState(State), the one place its state changes: a transition is written when it happened. */
    static final class SetState {
        @Advice.OnMethodEnter
        static Object enter(@Advice.This Object self) {
            return StreamsRecorder.state(self);
        }

        @Advice.OnMethodExit(onThrowable = Throwable.class)
        static void exit(@Advice.This Object self, @Advice.Enter Object before) {
            StreamsRecorder.stateSet(self, before);
        }
    }

    /** setGlobalStateRestoreListener(listener): ours, recording, around the program's. */
    static final class RestoreListener {
        @Advice.OnMethodEnter
        static void enter(@Advice.This Object self,
                          @Advice.Argument(value = 0, readOnly = false, typing = Assigner.Typing.DYNAMIC) Object listener) {
            listener = StreamsRecorder.restoreListener(self, listener);
        }
    }

    /** KafkaStreams.close(...): the instance's last state is written by SetState; its processed records now. */
    static final class Close {
        @Advice.OnMethodExit(onThrowable = Throwable.class)
        static void exit(@Advice.This Object self) {
            StreamsRecorder.closed(self);
        }
    }

    /** Before kafka-streams 3.2 StreamTask has no doProcess: process(wallClockTime) takes the next record from its
     * PartitionGroup, processes it and clears its field before returning. The record the PartitionGroup handed out
     * on this thread is remembered... */
    static final class NextRecord {
        @Advice.OnMethodExit
        static void exit(@Advice.Return Object record) {
            StreamsRecorder.next(record);
        }
    }

    /** ...and processed when StreamTask.process returned true without throwing. */
    static final class ProcessReturned {
        @Advice.OnMethodExit(onThrowable = Throwable.class)
        static void exit(@Advice.Return boolean processed, @Advice.Thrown Throwable thrown) {
            StreamsRecorder.processReturned(processed && thrown == null);
        }
    }

    /** StreamTask.doProcess(wallClockTime) returned (kafka-streams 3.2 on): its record went through the topology
     * (processed). */
    static final class TaskProcessed {
        @Advice.OnMethodExit
        static void exit(@Advice.FieldValue("record") Object record) {
            StreamsRecorder.processed(record);
        }
    }
}
