import java.io.ByteArrayOutputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * Runs several Kafka tool commands in one JVM, one after the other, as kafka-run-class.sh would
 * run each (main class, arguments), so that a side-by-side test pays one JVM start per cluster
 * rather than one per command. Each command's stdout, stderr and exit code go to files in the
 * directory named by args[0]; args[1] holds the commands, one a line: the main class and its
 * arguments separated by tabs. Kafka's tools end through org.apache.kafka.common.utils.Exit,
 * whose exit and halt procedures are replaced here: the code is recorded and the
 * command's thread parks.
 * System.out/err are swapped for streams that forward to the current command's buffers before
 * any Kafka class loads, so that log4j's console appender (which keeps the stream it found)
 * writes there too.
 */
public class ToolBatch {
    static final InheritableThreadLocal<CompletableFuture<Integer>> CURRENT = new InheritableThreadLocal<>();

    static final class Switch extends OutputStream {
        volatile OutputStream target;
        Switch(OutputStream t) { target = t; }
        @Override public void write(int b) throws java.io.IOException { target.write(b); }
        @Override public void write(byte[] b, int off, int len) throws java.io.IOException { target.write(b, off, len); }
        @Override public void flush() throws java.io.IOException { target.flush(); }
    }

    public static void main(String[] args) throws Exception {
        Path dir = Path.of(args[0]);
        List<String> lines = Files.readAllLines(Path.of(args[1]), StandardCharsets.UTF_8);
        PrintStream realOut = System.out;
        Switch out = new Switch(realOut), err = new Switch(System.err);
        System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
        System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
        Class<?> exit = Class.forName("org.apache.kafka.common.utils.Exit");
        Class<?> proc = Class.forName("org.apache.kafka.common.utils.Exit$Procedure");
        // Exit.exit / Exit.halt: the command's code is handed to the loop below and the calling
        // thread parks for good (a throw would be caught and printed by the tools' own catch-alls).
        Object parker = java.lang.reflect.Proxy.newProxyInstance(proc.getClassLoader(), new Class<?>[]{proc},
            (p, m, a) -> {
                if (!m.getName().equals("execute"))
                    return m.getName().equals("hashCode") ? 0 : m.getName().equals("equals") ? p == a[0] : "parker";
                System.out.flush();
                System.err.flush();
                CURRENT.get().complete((Integer) a[0]);
                while (true) Thread.sleep(Long.MAX_VALUE);
            });
        exit.getMethod("setExitProcedure", proc).invoke(null, parker);
        exit.getMethod("setHaltProcedure", proc).invoke(null, parker);
        for (int i = 0; i < lines.size(); i++) {
            if (lines.get(i).isEmpty()) continue;
            String[] parts = lines.get(i).split("\t", -1);
            ByteArrayOutputStream o = new ByteArrayOutputStream(), e = new ByteArrayOutputStream();
            out.target = o;
            err.target = e;
            CompletableFuture<Integer> done = new CompletableFuture<>();
            Thread t = new Thread(() -> {
                CURRENT.set(done);
                try {
                    Method main = Class.forName(parts[0]).getMethod("main", String[].class);
                    main.invoke(null, (Object) Arrays.copyOfRange(parts, 1, parts.length));
                    done.complete(0);
                } catch (InvocationTargetException ite) {
                    ite.getCause().printStackTrace();   // as the JVM prints an uncaught exception
                    done.complete(1);
                } catch (Throwable x) {
                    x.printStackTrace();
                    done.complete(1);
                }
            }, "main");                                 // log4j prints the thread name
            t.setDaemon(true);
            t.start();
            int code = done.get();
            System.out.flush();
            System.err.flush();
            out.target = realOut;
            err.target = realOut;
            Files.write(dir.resolve(i + ".out"), o.toByteArray());
            Files.write(dir.resolve(i + ".err"), e.toByteArray());
            Files.writeString(dir.resolve(i + ".rc"), Integer.toString(code));
        }
        System.exit(0);                                 // the parked and the tools' leftover threads
    }
}
