package dev.cohort.spark;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.HexFormat;

/** Prints a digest of the job secret it was given (never the secret), or "none". */
public final class SecretProbe {

    private SecretProbe() {}

    public static void main(String[] args) throws Exception {
        String secret = System.getenv("COHORT_SECRET");
        System.out.println("SECRET "
                + (secret == null
                        ? "none"
                        : HexFormat.of()
                                .formatHex(MessageDigest.getInstance("SHA-256")
                                        .digest(secret.getBytes(StandardCharsets.UTF_8)))
                                .substring(0, 16)));
    }
}
