package testbed.agent;

import static net.bytebuddy.matcher.ElementMatchers.isConstructor;
import static net.bytebuddy.matcher.ElementMatchers.isPublic;
import static net.bytebuddy.matcher.ElementMatchers.named;
import static net.bytebuddy.matcher.ElementMatchers.returns;
import static net.bytebuddy.matcher.ElementMatchers.takesArgument;
import static net.bytebuddy.matcher.ElementMatchers.takesArguments;

import java.lang.instrument.Instrumentation;

import net.bytebuddy.agent.builder.AgentBuilder;
import net.bytebuddy.asm.Advice;
import net.bytebuddy.asm.AsmVisitorWrapper;
import net.bytebuddy.description.type.TypeDescription;
import net.bytebuddy.dynamic.ClassFileLocator;
import net.bytebuddy.dynamic.DynamicType;
import net.bytebuddy.pool.TypePool;
import net.bytebuddy.utility.JavaModule;

/** testbed's Java agent: started by every `java` of a command member through JAVA_TOOL_OPTIONS
 * (-javaagent:testbed-agent.jar), it weaves ConsumerAdvice into KafkaConsumer (ProducerAdvice into KafkaProducer, for
 * transactions' offsets; StreamsAdvice into Kafka Streams) as the program loads it, so the program writes the member's
 * history unchanged. docs/your-consumer.md, "JVM programs". */
public final class TestbedAgent {
    private TestbedAgent() {}

    public static void premain(String args, Instrumentation inst) {
        try {
            AgentConfig config = AgentConfig.load(args);
            if (config == null) {
                Agent.say("no member config (" + AgentConfig.ENV + "): recording nothing");
                return;
            }
            Agent agent = new Agent(config);
            Recorder.AGENT = agent;
            Runtime.getRuntime().addShutdownHook(new Thread(agent::atExit, "testbed-agent-exit"));
            install(inst, agent);
        } catch (Throwable t) {
            Agent.say("not installed, the program runs without it: " + t);
        }
    }

    static void install(Instrumentation inst, Agent agent) {
        ClassFileLocator own = ClassFileLocator.ForClassLoader.of(TestbedAgent.class.getClassLoader());
        new AgentBuilder.Default()
                .with(new AgentBuilder.Listener.Adapter() {
                    @Override
                    public void onError(String typeName, ClassLoader loader, JavaModule module, boolean loaded,
                                        Throwable throwable) {
                        agent.failed("weaving " + typeName, throwable);
                    }
                })
                .type(named("org.apache.kafka.clients.consumer.KafkaConsumer"))
                .transform((DynamicType.Builder<?> builder, TypeDescription type, ClassLoader loader, JavaModule module,
                            java.security.ProtectionDomain domain) -> {
                    Advices a = new Advices(own, loader, "ConsumerAdvice");
                    return builder
                        .visit(a.get("Construct").on(isConstructor()))
                        .visit(a.get("SubscribeWithListener").on(named("subscribe").and(isPublic())
                                .and(takesArguments(2))
                                .and(takesArgument(1, named("org.apache.kafka.clients.consumer.ConsumerRebalanceListener")))))
                        .visit(a.get("SubscribeAlone").on(named("subscribe").and(isPublic()).and(takesArguments(1))))
                        .visit(a.get("CommitAsyncAlone").on(named("commitAsync").and(isPublic()).and(takesArguments(0))))
                        .visit(consumerCalls(a));
                })
                // The consumer protocol's implementation: Kafka Streams builds it itself as a main consumer on the streams
                // protocol (recorded as a consumer; as a KafkaConsumer's implementation it is not: Recorder.enter
                // finds no state for it), and it auto-commits at close through its own commitSync.
                .type(named("org.apache.kafka.clients.consumer.internals.AsyncKafkaConsumer"))
                .transform((DynamicType.Builder<?> builder, TypeDescription type, ClassLoader loader, JavaModule module,
                            java.security.ProtectionDomain domain) -> {
                    Advices a = new Advices(own, loader, "ConsumerAdvice");
                    return builder
                        .visit(a.get("StreamsConsumerConstruct").on(isConstructor()))
                        .visit(a.get("SubscribeStreams").on(named("subscribe").and(isPublic()).and(takesArguments(2))
                                .and(takesArgument(1, named(
                                        "org.apache.kafka.clients.consumer.internals.StreamsRebalanceListener")))))
                        .visit(consumerCalls(a))
                        .visit(a.get("AutoCommitOnClose").on(named("commitSyncAllConsumed").and(takesArguments(1))))
                        .visit(a.get("AutoCommitOnCloseResult").on(named("commitSync").and(isPublic())
                                .and(takesArguments(java.time.Duration.class))));
                })
                // The consumer protocol's auto-commits, made on the client's background thread.
                .type(named("org.apache.kafka.clients.consumer.internals.CommitRequestManager"))
                .transform((DynamicType.Builder<?> builder, TypeDescription type, ClassLoader loader, JavaModule module,
                            java.security.ProtectionDomain domain) ->
                        builder.visit(new Advices(own, loader, "ConsumerAdvice").get("AutoCommitRequested")
                                .on(named("requestAutoCommit").and(takesArguments(1)))))
                // The classic protocol's coordinator, for the commits the client makes on its own (auto-commits).
                .type(named("org.apache.kafka.clients.consumer.internals.ConsumerCoordinator"))
                .transform((DynamicType.Builder<?> builder, TypeDescription type, ClassLoader loader, JavaModule module,
                            java.security.ProtectionDomain domain) -> {
                    Advices a = new Advices(own, loader, "ConsumerAdvice");
                    return builder
                        .visit(a.get("AutoCommitAsync").on(named("commitOffsetsAsync").and(takesArguments(2))))
                        .visit(a.get("AutoCommitSync").on(named("commitOffsetsSync").and(takesArguments(2))));
                })
                // Offsets committed through a producer's transaction (exactly-once programs, Streams under EOS).
                .type(named("org.apache.kafka.clients.producer.KafkaProducer"))
                .transform((DynamicType.Builder<?> builder, TypeDescription type, ClassLoader loader, JavaModule module,
                            java.security.ProtectionDomain domain) -> {
                    Advices a = new Advices(own, loader, "ProducerAdvice");
                    return builder
                        .visit(a.get("SendOffsets").on(named("sendOffsetsToTransaction").and(isPublic())
                                .and(takesArguments(2))))
                        .visit(a.get("CommitTransaction").on(named("commitTransaction").and(isPublic())))
                        .visit(a.get("AbortTransaction").on(named("abortTransaction").and(isPublic())));
                })
                // A program's Kafka Streams: its instance (state, tasks, restorations) and its tasks' processing.
                .type(named("org.apache.kafka.streams.KafkaStreams"))
                .transform((DynamicType.Builder<?> builder, TypeDescription type, ClassLoader loader, JavaModule module,
                            java.security.ProtectionDomain domain) -> {
                    Advices a = new Advices(own, loader, "StreamsAdvice");
                    return builder
                        .visit(a.get("Construct").on(isConstructor()))
                        .visit(a.get("SetState").on(named("setState").and(takesArguments(1))))
                        .visit(a.get("RestoreListener").on(named("setGlobalStateRestoreListener")
                                .and(takesArguments(1))))
                        .visit(a.get("Close").on(named("close").and(isPublic())));
                })
                .type(named("org.apache.kafka.streams.processor.internals.StreamTask"))
                .transform((DynamicType.Builder<?> builder, TypeDescription type, ClassLoader loader, JavaModule module,
                            java.security.ProtectionDomain domain) -> {
                    Advices a = new Advices(own, loader, "StreamsAdvice");
                    if (type.getDeclaredMethods().filter(named("doProcess")).isEmpty()) { // before 3.2
                        return builder.visit(a.get("ProcessReturned").on(named("process").and(takesArguments(long.class))
                                .and(returns(boolean.class))));
                    }
                    return builder.visit(a.get("TaskProcessed").on(named("doProcess").and(takesArguments(1))));
                })
                .type(named("org.apache.kafka.streams.processor.internals.PartitionGroup"))
                .transform((DynamicType.Builder<?> builder, TypeDescription type, ClassLoader loader, JavaModule module,
                            java.security.ProtectionDomain domain) ->
                        builder.visit(new Advices(own, loader, "StreamsAdvice").get("NextRecord")
                                .on(named("nextRecord"))))
                .installOn(inst);
    }

    /** A consumer's poll, commits (but commitAsync() alone, which KafkaConsumer's advice redirects) and close: on
     * KafkaConsumer and on the AsyncKafkaConsumer Streams builds for the streams protocol alike. */
    private static AsmVisitorWrapper consumerCalls(Advices a) {
        return new AsmVisitorWrapper.Compound(
                a.get("Poll").on(named("poll").and(isPublic()).and(takesArguments(1))),
                a.get("CommitSync").on(named("commitSync").and(isPublic())),
                a.get("CommitAsyncCallback").on(named("commitAsync").and(isPublic()).and(takesArguments(1))),
                a.get("CommitAsyncOffsets").on(named("commitAsync").and(isPublic()).and(takesArguments(2))),
                a.get("Close").on(named("close").and(isPublic())));
    }

    /** The advice, read as class files, never loaded: it names Kafka's types, which only the program's class loader
     * knows (a Spring Boot fat jar's nested kafka-clients): its type pool reads the agent's jar, then that loader. */
    private static final class Advices {
        private final ClassFileLocator locator;
        private final TypePool pool;
        private final String holder;

        Advices(ClassFileLocator own, ClassLoader loader, String holder) {
            this.locator = new ClassFileLocator.Compound(own, ClassFileLocator.ForClassLoader.of(loader));
            this.pool = TypePool.Default.of(locator);
            this.holder = holder;
        }

        Advice get(String name) {
            return Advice.to(pool.describe("testbed.agent." + holder + "$" + name).resolve(), locator);
        }
    }
}
