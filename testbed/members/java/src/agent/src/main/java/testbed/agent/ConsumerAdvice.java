package testbed.agent;

import java.lang.reflect.InvocationTargetException;
import java.nio.ByteBuffer;
import java.util.Collection;
import java.util.List;
import java.util.regex.Pattern;

import net.bytebuddy.asm.Advice;
import net.bytebuddy.implementation.bytecode.assign.Assigner;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetCommitCallback;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;

/** The code woven into org.apache.kafka.clients.consumer.KafkaConsumer: the public facade, which from kafka-clients
 * 3.7 delegates to the classic or the consumer-protocol implementation, so one set covers both protocols.
 *
 * Each method body here is inlined into KafkaConsumer's own methods, in its class loader: it may name Kafka's types,
 * and it calls only Recorder (public, on the system class path, taking JDK types). These classes are never loaded
 * themselves (TestbedAgent reads them as class files): a fat jar's kafka-clients is not visible where the agent is. */
final class ConsumerAdvice {
    private ConsumerAdvice() {}

    /** Every constructor: the settings it resolved (ConsumerConfig), innermost constructor first. */
    static final class Construct {
        @Advice.OnMethodExit
        static void exit(@Advice.This Object self, @Advice.AllArguments Object[] args) {
            Recorder.constructed(self, args);
        }
    }

    /** subscribe(topics or pattern, listener): our listener around the program's; `started` once it returned. */
    static final class SubscribeWithListener {
        @Advice.OnMethodEnter
        static void enter(@Advice.This Object self,
                          @Advice.Argument(value = 1, readOnly = false, typing = Assigner.Typing.DYNAMIC) Object listener) {
            listener = Recorder.listener(self, listener, ConsumerRebalanceListener.class);
        }

        @Advice.OnMethodExit(onThrowable = Throwable.class)
        static void exit(@Advice.This Object self, @Advice.Argument(0) Object topics, @Advice.Thrown Throwable thrown) {
            if (thrown == null) {
                Recorder.subscribed(self, topics);
            }
        }
    }

    /** subscribe(topics or pattern) without a listener: made a subscribe with ours, so ownership is recorded. */
    static final class SubscribeAlone {
        @Advice.OnMethodEnter(skipOn = Advice.OnNonDefaultValue.class)
        @SuppressWarnings("unchecked")
        static boolean enter(@Advice.This KafkaConsumer<?, ?> self, @Advice.Argument(0) Object what) throws Throwable {
            if (!Recorder.active(self)) {
                return false;
            }
            ConsumerRebalanceListener ours = (ConsumerRebalanceListener) Recorder.listener(self, null,
                    ConsumerRebalanceListener.class);
            if (what instanceof Collection) {
                self.subscribe((Collection<String>) what, ours);
            } else if (what instanceof Pattern) {
                self.subscribe((Pattern) what, ours);
            } else {
                try {
                    self.getClass().getMethod("subscribe", what.getClass(), ConsumerRebalanceListener.class)
                            .invoke(self, what, ours);
                } catch (NoSuchMethodException e) {
                    return false;
                } catch (InvocationTargetException e) {
                    throw e.getCause();
                }
            }
            return true;
        }
    }

    /** poll(Duration), poll(long): what the last poll handed over is processed now; this poll's records are
     * remembered for the next call. */
    static final class Poll {
        @Advice.OnMethodEnter
        static Object enter(@Advice.This Object self) {
            Object st = Recorder.enter(self);
            if (st != null) {
                Recorder.beforePoll(st);
            }
            return st;
        }

        @Advice.OnMethodExit(onThrowable = Throwable.class)
        static void exit(@Advice.Enter Object st, @Advice.Return ConsumerRecords<?, ?> records,
                         @Advice.Thrown Throwable thrown) {
            Recorder.leave();
            if (st == null) {
                return;
            }
            if (thrown != null) {
                Recorder.pollFailed(st, thrown);
                return;
            }
            if (records == null || records.isEmpty()) {
                return;
            }
            // Per partition: its records' offsets follow each other (the common case) and the batch is handed over as
            // one range, read from its first and last record only; else record by record. The produce time is the
            // load's 'ts' header (8 bytes big-endian), else the record's timestamp.
            for (TopicPartition tp : records.partitions()) {
                List<? extends ConsumerRecord<?, ?>> list = records.records(tp);
                int n = list.size();
                boolean range = n > 0 && list.get(n - 1).offset() - list.get(0).offset() + 1 == n;
                long firstTs = Long.MIN_VALUE;
                for (int i = 0; i < n; i = range && i == 0 && n > 1 ? n - 1 : i + 1) {
                    ConsumerRecord<?, ?> r = list.get(i);
                    long ts = Long.MIN_VALUE;
                    Header h = r.headers().lastHeader("ts");
                    byte[] v = h == null ? null : h.value();
                    if (v != null && v.length == 8) {
                        ts = ByteBuffer.wrap(v).getLong();
                    } else if (r.timestamp() >= 0) {
                        ts = r.timestamp();
                    }
                    if (!range) {
                        Recorder.handed(st, tp.topic(), tp.partition(), r.offset(), r.offset(), ts, ts);
                    } else if (i == 0) {
                        firstTs = ts;
                    }
                    if (range && i == n - 1) {
                        Recorder.handed(st, tp.topic(), tp.partition(), list.get(0).offset(), r.offset(), firstTs, ts);
                    }
                }
            }
        }
    }

    /** commitSync(...), all four: processed records first, then the commit with its outcome. */
    static final class CommitSync {
        @Advice.OnMethodEnter
        static Object[] enter(@Advice.This Object self, @Advice.AllArguments Object[] args) {
            Object st = Recorder.enter(self);
            if (st == null) {
                return null;
            }
            String trigger = Recorder.beforeCommit(st);
            return new Object[] {st, trigger, Recorder.offsets(self, args.length > 0 ? args[0] : null)};
        }

        @Advice.OnMethodExit(onThrowable = Throwable.class)
        static void exit(@Advice.Enter Object[] entered, @Advice.Thrown Throwable thrown) {
            Recorder.leave();
            Recorder.commitReturned(entered, thrown, true);
        }
    }

    /** commitAsync() : made a commitAsync(callback) with ours. */
    static final class CommitAsyncAlone {
        @Advice.OnMethodEnter(skipOn = Advice.OnNonDefaultValue.class)
        static boolean enter(@Advice.This KafkaConsumer<?, ?> self) {
            if (!Recorder.active(self)) {
                return false;
            }
            self.commitAsync((OffsetCommitCallback) null);
            return true;
        }
    }

    /** commitAsync(callback): recorded when its answer comes, through our callback around the program's. */
    static final class CommitAsyncCallback {
        @Advice.OnMethodEnter
        static Object[] enter(@Advice.This Object self,
                              @Advice.Argument(value = 0, readOnly = false, typing = Assigner.Typing.DYNAMIC) Object callback) {
            Object st = Recorder.enter(self);
            if (st == null) {
                return null;
            }
            String trigger = Recorder.beforeCommit(st);
            Offsets sent = Recorder.offsets(self, null);
            callback = Recorder.commitCallback(st, trigger, sent, callback, OffsetCommitCallback.class);
            return new Object[] {st, trigger, sent};
        }

        @Advice.OnMethodExit(onThrowable = Throwable.class)
        static void exit(@Advice.Enter Object[] entered, @Advice.Thrown Throwable thrown) {
            Recorder.leave();
            Recorder.commitReturned(entered, thrown, false);
        }
    }

    /** commitAsync(offsets, callback). */
    static final class CommitAsyncOffsets {
        @Advice.OnMethodEnter
        static Object[] enter(@Advice.This Object self, @Advice.Argument(0) Object offsets,
                              @Advice.Argument(value = 1, readOnly = false, typing = Assigner.Typing.DYNAMIC) Object callback) {
            Object st = Recorder.enter(self);
            if (st == null) {
                return null;
            }
            String trigger = Recorder.beforeCommit(st);
            Offsets sent = Recorder.offsets(self, offsets);
            callback = Recorder.commitCallback(st, trigger, sent, callback, OffsetCommitCallback.class);
            return new Object[] {st, trigger, sent};
        }

        @Advice.OnMethodExit(onThrowable = Throwable.class)
        static void exit(@Advice.Enter Object[] entered, @Advice.Thrown Throwable thrown) {
            Recorder.leave();
            Recorder.commitReturned(entered, thrown, false);
        }
    }

    /** close(...): what the program was handed is processed; `stopped` when it returned. */
    static final class Close {
        @Advice.OnMethodEnter
        static Object enter(@Advice.This Object self) {
            Object st = Recorder.enter(self);
            if (st != null) {
                Recorder.beforeClose(st);
            }
            return st;
        }

        @Advice.OnMethodExit(onThrowable = Throwable.class)
        static void exit(@Advice.Enter Object st, @Advice.Thrown Throwable thrown) {
            Recorder.leave();
            if (st != null) {
                Recorder.closed(st, thrown);
            }
        }
    }

    /** ConsumerCoordinator.commitOffsetsAsync(offsets, callback) outside a commit of the program's: an auto-commit at
     * a poll (classic protocol), recorded when its answer comes. */
    static final class AutoCommitAsync {
        @Advice.OnMethodEnter
        static void enter(@Advice.Argument(0) Object offsets,
                          @Advice.Argument(value = 1, readOnly = false, typing = Assigner.Typing.DYNAMIC) Object callback) {
            Object st = Recorder.autoCommit();
            if (st != null) {
                callback = Recorder.commitCallback(st, "auto", Recorder.offsets(null, offsets), callback,
                        OffsetCommitCallback.class);
            }
        }
    }

    /** ConsumerCoordinator.commitOffsetsSync(offsets, timer) outside a commit of the program's: an auto-commit before
     * a rebalance or at close. */
    static final class AutoCommitSync {
        @Advice.OnMethodEnter
        static Object[] enter(@Advice.Argument(0) Object offsets) {
            Object st = Recorder.autoCommit();
            return st == null ? null : new Object[] {st, Recorder.offsets(null, offsets)};
        }

        @Advice.OnMethodExit(onThrowable = Throwable.class)
        static void exit(@Advice.Enter Object[] entered, @Advice.Return boolean done, @Advice.Thrown Throwable thrown) {
            if (entered != null) {
                Recorder.autoCommitted(entered[0], (Offsets) entered[1], done, thrown);
            }
        }
    }

    // ---- the consumer protocol's implementation (AsyncKafkaConsumer) and its background thread -------------------

    /** AsyncKafkaConsumer's constructors: the one Kafka Streams builds as a main consumer on the streams protocol
     * (KIP-1071) is recorded as a consumer of its own; a KafkaConsumer's implementation is not (the KafkaConsumer is). */
    static final class StreamsConsumerConstruct {
        @Advice.OnMethodExit
        static void exit(@Advice.This Object self, @Advice.AllArguments Object[] args) {
            Recorder.constructedForStreams(self, args);
        }
    }

    /** AsyncKafkaConsumer.subscribe(topics, StreamsRebalanceListener): ours around Streams' own; `started` once it
     * returned. */
    static final class SubscribeStreams {
        @Advice.OnMethodEnter
        static void enter(@Advice.This Object self,
                          @Advice.Argument(value = 1, readOnly = false, typing = Assigner.Typing.DYNAMIC) Object listener) {
            listener = Recorder.streamsListener(self, listener);
        }

        @Advice.OnMethodExit(onThrowable = Throwable.class)
        static void exit(@Advice.This Object self, @Advice.Argument(0) Object topics, @Advice.Thrown Throwable thrown) {
            if (thrown == null) {
                Recorder.subscribed(self, topics);
            }
        }
    }

    /** CommitRequestManager.requestAutoCommit(request): every auto-commit of the consumer protocol (at the interval,
     * before a revocation), on the background thread; recorded when its answer comes. */
    static final class AutoCommitRequested {
        @Advice.OnMethodExit
        static void exit(@Advice.FieldValue("subscriptions") Object subscriptions, @Advice.Argument(0) Object request,
                         @Advice.Return Object future) {
            Recorder.autoCommitRequested(subscriptions, request, future);
        }
    }

    /** AsyncKafkaConsumer.commitSyncAllConsumed(timer): the consumer protocol's auto-commit at close. */
    static final class AutoCommitOnClose {
        @Advice.OnMethodEnter
        static void enter(@Advice.FieldValue("subscriptions") Object subscriptions) {
            Recorder.autoCommitOnClose(subscriptions);
        }

        @Advice.OnMethodExit(onThrowable = Throwable.class)
        static void exit() {
            Recorder.autoCommitOnCloseEnded();
        }
    }

    /** AsyncKafkaConsumer.commitSync(timeout), which the auto-commit at close calls: its outcome. */
    static final class AutoCommitOnCloseResult {
        @Advice.OnMethodExit(onThrowable = Throwable.class)
        static void exit(@Advice.Thrown Throwable thrown) {
            Recorder.autoCommitOnCloseReturned(thrown);
        }
    }
}
