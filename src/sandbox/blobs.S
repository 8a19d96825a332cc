/* Build products embedded so execbox stays one binary: the static sandbox
 * init, the seccomp filters compiled by tools/gen_seccomp, and the session
 * drivers from src/drivers. */
        .section .rodata
        .balign 16
        .global xb_init_image
        .global xb_init_image_end
xb_init_image:
        .incbin XB_INIT_PATH
xb_init_image_end:

        .balign 16
        .global xb_seccomp_main_bpf
        .global xb_seccomp_main_bpf_end
xb_seccomp_main_bpf:
        .incbin XB_SECCOMP_MAIN
xb_seccomp_main_bpf_end:

        .balign 16
        .global xb_seccomp_stub_bpf
        .global xb_seccomp_stub_bpf_end
xb_seccomp_stub_bpf:
        .incbin XB_SECCOMP_STUB
xb_seccomp_stub_bpf_end:

        /* Session drivers, passed to their interpreters with -c / -e: NUL-terminated text. */
        .global xb_python_driver
xb_python_driver:
        .incbin XB_PYTHON_DRIVER
        .byte 0
        .global xb_node_driver
xb_node_driver:
        .incbin XB_NODE_DRIVER
        .byte 0
        .section .note.GNU-stack,"",@progbits
