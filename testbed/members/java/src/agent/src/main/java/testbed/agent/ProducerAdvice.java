package testbed.agent;

import net.bytebuddy.asm.Advice;

/** The code woven into org.apache.kafka.clients.producer.KafkaProducer: the offsets an exactly-once program commits
 * through its producer's transaction (a consume-transform-produce loop, a Kafka Streams thread under exactly_once_v2).
 * Like ConsumerAdvice, inlined into the program's class and calling only Transactions with JDK types. */
final class ProducerAdvice {
    private ProducerAdvice() {}

    /** sendOffsetsToTransaction(offsets, group metadata or, before 4.0, group id): the offsets wait for the
     * transaction's outcome. */
    static final class SendOffsets {
        @Advice.OnMethodEnter
        static boolean enter() {
            return Transactions.enter();
        }

        @Advice.OnMethodExit(onThrowable = Throwable.class)
        static void exit(@Advice.This Object self, @Advice.Enter boolean outermost, @Advice.Argument(0) Object offsets,
                         @Advice.Thrown Throwable thrown) {
            Transactions.leave();
            if (outermost && thrown == null) {
                Transactions.offsetsSent(self, offsets);
            }
        }
    }

    /** commitTransaction(...): the offsets sent in it are committed, or not, with its outcome. */
    static final class CommitTransaction {
        @Advice.OnMethodEnter
        static String enter() {
            return Transactions.committing();
        }

        @Advice.OnMethodExit(onThrowable = Throwable.class)
        static void exit(@Advice.This Object self, @Advice.Enter String trigger, @Advice.Thrown Throwable thrown) {
            Transactions.leave();
            if (trigger != null) {
                Transactions.commitReturned(self, trigger, thrown);
            }
        }
    }

    /** abortTransaction(): the offsets sent in it were never committed. */
    static final class AbortTransaction {
        @Advice.OnMethodExit(onThrowable = Throwable.class)
        static void exit(@Advice.This Object self) {
            Transactions.aborted(self);
        }
    }
}
