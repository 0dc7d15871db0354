package reviewer.neo4j;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.HashMap;
import java.util.Map;
import java.util.stream.Stream;

import org.neo4j.dbms.api.DatabaseManagementService;
import org.neo4j.dbms.api.DatabaseManagementServiceBuilder;

/**
 * Starts Neo4j Community in-process with Bolt on 127.0.0.1, auth off, in a
 * throwaway data directory. Prints "BOLT READY bolt://127.0.0.1:PORT" once the
 * Bolt port accepts connections, then runs until stdin closes or the process
 * is signalled; the data directory is removed on the way out.
 *
 * Arguments: [port] [data-dir]. Port 0 (the default) picks a free port; a
 * given data directory is kept (used by restart tests and the benchmarks'
 * kept stores). The page cache is 256m unless -Dreviewer.pagecache=SIZE.
 */
public final class Launcher {
    public static void main(String[] args) throws Exception {
        int port = args.length > 0 ? Integer.parseInt(args[0]) : 0;
        if (port == 0) {
            try (ServerSocket probe = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
                port = probe.getLocalPort();
            }
        }
        boolean keep = args.length > 1;
        Path home = keep ? Path.of(args[1]) : Files.createTempDirectory("reviewer-neo4j-");
        Files.createDirectories(home);

        Map<String, String> config = new HashMap<>();
        config.put("server.bolt.enabled", "true");
        config.put("server.bolt.listen_address", "127.0.0.1:" + port);
        config.put("server.bolt.advertised_address", "127.0.0.1:" + port);
        config.put("server.bolt.tls_level", "DISABLED");
        config.put("dbms.security.auth_enabled", "false");
        config.put("server.http.enabled", "false");
        config.put("server.https.enabled", "false");
        config.put("server.memory.pagecache.size", System.getProperty("reviewer.pagecache", "256m"));
        config.put("db.tx_log.rotation.retention_policy", "1 files");
        String txTotal = System.getProperty("reviewer.txtotal");
        if (txTotal != null) { // the memory all transactions may hold together (a server's default: 70% of the heap)
            config.put("db.memory.transaction.total.max", txTotal);
        }
        config.put("dbms.usage_report.enabled", "false");
        // a test server stops in under a second: Bolt's network threads wait
        // 5 s of quiet and its worker pool another 5 s by default
        config.put("internal.dbms.bolt.netty_server_shutdown_quiet_period", "0");
        config.put("internal.server.bolt.thread_pool_shutdown_wait_time", "0s");

        StringBuilder conf = new StringBuilder();
        config.forEach((k, v) -> conf.append(k).append('=').append(v).append('\n'));
        Path confFile = home.resolve("neo4j.conf");
        Files.writeString(confFile, conf.toString());
        DatabaseManagementService dbms = new DatabaseManagementServiceBuilder(home)
                .loadPropertiesFromFile(confFile)
                .build();
        final Path dataHome = home;
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            dbms.shutdown();
            if (!keep) {
                deleteTree(dataHome);
            }
        }));
        dbms.database("neo4j"); // fails fast when the default database did not start
        waitForPort(port);
        System.out.println("BOLT READY bolt://127.0.0.1:" + port);
        System.out.flush();

        // Run until our parent closes stdin (the test session ended or died).
        while (System.in.read() != -1) {
            // ignore input
        }
        System.exit(0);
    }

    private static void waitForPort(int port) throws InterruptedException {
        long deadline = System.currentTimeMillis() + 60_000;
        while (System.currentTimeMillis() < deadline) {
            try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress("127.0.0.1", port), 500);
                return;
            } catch (IOException notYet) {
                Thread.sleep(100);
            }
        }
        throw new IllegalStateException("Bolt did not answer on 127.0.0.1:" + port);
    }

    private static void deleteTree(Path root) {
        try (Stream<Path> walk = Files.walk(root)) {
            walk.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException ignored) {
            // best effort on a throwaway directory
        }
    }
}
