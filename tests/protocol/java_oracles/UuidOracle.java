import java.nio.ByteBuffer;
import java.util.Base64;

// Kafka 4.4 Uuid.fromString / toString rules, with java.util.Base64 of the JDK running it.
public class UuidOracle {
    static String fromString(String str) {
        try {
            if (str.length() > 24) throw new IllegalArgumentException("Input string with prefix `" + str.substring(0, 24) + "` is too long to be decoded as a base64 UUID");
            ByteBuffer b = ByteBuffer.wrap(Base64.getUrlDecoder().decode(str));
            if (b.remaining() != 16) throw new IllegalArgumentException("Input string `" + str + "` decoded as " + b.remaining() + " bytes, which is not equal to the expected 16 bytes of a base64-encoded UUID");
            long msb = b.getLong(), lsb = b.getLong();
            ByteBuffer out = ByteBuffer.wrap(new byte[16]); out.putLong(msb); out.putLong(lsb);
            return "OK " + Base64.getUrlEncoder().withoutPadding().encodeToString(out.array());
        } catch (IllegalArgumentException e) { return "ERR " + e.getMessage(); }
    }
    public static void main(String[] args) {
        for (String s : args) System.out.println(s + "\t" + fromString(s));
    }
}
