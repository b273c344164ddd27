"""Message builders for test conversations: ``u("Q?")``, ``a("A.", step_loss_mask=0)``, ``s("Be brief.")``."""


def u(content, **extra) -> dict:
    return {"role": "user", "content": content, **extra}


def a(content, **extra) -> dict:
    return {"role": "assistant", "content": content, **extra}


def s(content) -> dict:
    return {"role": "system", "content": content}
